"""Attention policies: names and spec checking."""

from fasa import _fasa


def policies(summaries=False):
    """The policy names (as a spec's name takes them), or with `summaries` a dict of
    name -> one-line summary."""
    if summaries:
        return dict(_fasa.policy_summaries())
    return _fasa.policy_names()


def policy_help():
    """Every policy with its options, as `fasa run --help` lists them."""
    return _fasa.policy_help()


def parse_policy(spec, model=None):
    """Checks a policy spec ("name" or "name:key=value,...") and returns (name, options dict).
    Raises FasaError (a ValueError) with the engine's message. With a model, the policy is made
    for it (every option checked, a calibration file read); without, the name, the keys and the
    values' forms are checked."""
    return _fasa.check_policy(spec, model._m if model is not None else None)
