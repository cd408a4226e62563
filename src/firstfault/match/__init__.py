"""Match: signatures compiled once; one streaming pass over each input yields hits."""
