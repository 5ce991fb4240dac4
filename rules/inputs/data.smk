"""Input functions of the dataset rules (rules/data.smk)."""


def papers_entry(dataset):
    return config["datasets"]["papers"][dataset]


def qa_entry(dataset):
    return config["datasets"]["qa_train"][dataset]


def rag_domain(domain):
    return config["datasets"]["rag"]["domains"][domain]
