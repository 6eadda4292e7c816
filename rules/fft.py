"""fft rules (to be filled)."""
