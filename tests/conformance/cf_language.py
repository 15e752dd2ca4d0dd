def run_all(s, rng): pass
def large(s, rng): pass
