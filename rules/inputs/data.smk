"""Input functions of the dataset rules (rules/data.smk)."""


def papers_entry(dataset):
    return config["datasets"]["papers"][dataset]


def qa_entry(dataset):
    return config["datasets"]["qa_train"][dataset]


def rag_domain(domain):
    return config["datasets"]["rag"]["domains"][domain]


def rag_corpus(domain):
    """A domain's corpus, [] without one (every answerer brings its answers: no retrieval)."""
    entry = rag_domain(domain)
    return raw_path(entry["corpus"]) if "corpus" in entry else []


def rag_domains_with_corpus():
    return [d for d in config["arena"]["domains"] if "corpus" in rag_domain(d)]


HUMAN_LABELS_CHECKED = "results/data/rag/human_labels.checked.json"


def human_labels_queries():
    """The converted queries of every RAG domain, which the human labels are checked against."""
    return [rag_files(d)["queries"] for d in config["datasets"]["rag"]["domains"]]


def human_labels_checked():
    """The human labels' check (rule check_human_labels), or nothing without human labels."""
    return (
        [HUMAN_LABELS_CHECKED] if config["datasets"]["rag"].get("human_labels") else []
    )


def instruction_labels(dataset):
    """responder -> its human labels file (datasets.instructions.<dataset>.human_labels), for
    the responders of the pool (an overlay that removes one leaves its labels unread).
    """
    labels = config["datasets"]["instructions"][dataset].get("human_labels") or {}
    return {r: p for r, p in labels.items() if r in config["drfr"]["responders"]}


def instruction_labels_checked(dataset):
    """The DRFR human labels' check of a dataset (rule check_drfr_human_labels), or nothing."""
    return (
        [f"results/data/instructions/{dataset}.human_labels.checked.json"]
        if instruction_labels(dataset)
        else []
    )
