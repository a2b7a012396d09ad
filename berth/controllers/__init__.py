"""Reconcile loops that turn workload objects into pods, through the object store."""
