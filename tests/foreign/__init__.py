"""Traces written by other GenAI instrumentations, as those libraries themselves write them."""
