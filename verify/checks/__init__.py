"""The claims, one module each (or a group that shares a design); ``_`` modules hold machinery several claims share.
:func:`verify.claim.all_claims` imports every module here."""
