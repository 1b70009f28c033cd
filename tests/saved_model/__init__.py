"""Tests of kernel_ext.saved_model (and the corpus coverage script they share)."""
