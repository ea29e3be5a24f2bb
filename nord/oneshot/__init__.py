"""Weight sharing: the NAS-Bench-201 paper's one-shot searches (DARTS first and second order,
GDAS, SETN, ENAS, random search with parameter sharing) on nord's supernet.

Details (the methods, their settings, what differs from the benchmark authors' code):
docs/oneshot.md.
"""
