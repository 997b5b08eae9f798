"""A client that exists only in the tests: one spec module (``spec.py``) and a stub client
(``bin/fakecli``). The conformance suite registers it and expects every part of ccs to serve it
with no change outside this folder."""
