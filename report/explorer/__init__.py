"""`nphe4v view`: a local, read-only web explorer over run folders, and the human step-annotation page."""
