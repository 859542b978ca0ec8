"""The package's one small multilayer perceptron and the encoders built on it."""
