"""Reading and writing the files a user names: the output guard (:mod:`hoprag.io.outputs`)."""
