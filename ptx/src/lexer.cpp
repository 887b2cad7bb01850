// placeholder (issue 15): filled in by the front end's implementation.
