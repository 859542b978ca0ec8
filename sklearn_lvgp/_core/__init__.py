"""Private foundations every layer uses: dense linear algebra (with the BLAS/LAPACK calls that
jitted code makes), parameter packing, validation, initialisation, progress and warnings,
scaling, memory blocks, workspaces and thread control."""
