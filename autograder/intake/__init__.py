"""What a student hands in, read without trusting it: which file, its source cells, its signatures."""
