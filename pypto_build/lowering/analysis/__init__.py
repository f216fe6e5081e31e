"""Dataflow analyses of function bodies, on one forward driver (:mod:`.dataflow`)."""
