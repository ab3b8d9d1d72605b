"""The claims, one module each (a module may hold a group of claims that share a design); modules whose names start
with ``_`` hold machinery that several claims share.  :func:`verify.claim.all_claims` imports every module here.
"""
