"""fpfacts.py — reads facts.env (the facts shared by every language) for
the repository's Python scripts: ``fpfacts.load()`` returns a dict of strings.
"""
import os

FACTS_ENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "facts.env")


def load(path=FACTS_ENV):
    facts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                facts[key] = value.strip('"')
    return facts


def supported_range(facts):
    """The supported versions as people write them: "3.11–3.15"."""
    return "%s.%s\u2013%s.%s" % (facts["PY_MAJOR"], facts["PY_MINOR_MIN"],
                                 facts["PY_MAJOR"], facts["PY_MINOR_MAX"])


def manifest_path(facts):
    """$FRAMEPROOF_HOME/interpreters.json, with the default home."""
    home = os.environ.get("FRAMEPROOF_HOME") or facts["FRAMEPROOF_HOME_DEFAULT"]
    return os.path.join(home, facts["MANIFEST_NAME"])


def provisioned(facts, path=None):
    """(manifest path, {id: entry}) of the interpreters provisioned on this
    machine (path, else manifest_path()), read now; no entries when there is
    no manifest yet."""
    import json
    path = path or manifest_path(facts)
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)["interpreters"]
    except FileNotFoundError:
        entries = []
    return path, {e["id"]: e for e in entries}


def matrix(facts, path=None):
    """(manifest path, [(id, entry or None)]): every id of the provisioning
    matrix in its order, with its manifest entry when it is provisioned."""
    path, have = provisioned(facts, path)
    return path, [(ident, have.get(ident)) for ident in facts["MATRIX_IDS"].split()]
