"""Recorded sessions as training data: WebPRM preference pairs and SFT rows."""
