"""Tests of Scripts/bench's parts (python3 -m unittest discover -s Scripts/benchkit/tests -t Scripts)."""
