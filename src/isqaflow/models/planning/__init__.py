"""Planning and checks at DAG build (no model is loaded): the GPU plan of each job and the config checks of how each stage's models run."""
