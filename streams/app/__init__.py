"""The live pipeline: the Faust topology around the rules core."""
