"""Client quotas: produce/fetch byte rates and request percentages (KIP-13, KIP-55, KIP-124)."""
