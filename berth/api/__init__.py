"""Objects and manifests."""
