"""Attention policies: names and spec checking."""

from typing import Dict, List, Literal, Optional, Tuple, Union, overload

from fasa import _check, _fasa
from fasa._model import Model


@overload
def policies(summaries: Literal[False] = ...) -> List[str]: ...


@overload
def policies(summaries: Literal[True]) -> Dict[str, str]: ...


@overload
def policies(summaries: bool) -> Union[List[str], Dict[str, str]]: ...


def policies(summaries: bool = False) -> Union[List[str], Dict[str, str]]:
    """The policy names (as a spec's name takes them), or with `summaries` a dict of
    name -> one-line summary."""
    if _check.flag("policies", "summaries", summaries):
        return dict(_fasa.policy_summaries())
    return list(_fasa.policy_names())


def policy_help() -> str:
    """Every policy with its options, as `fasa run --help` lists them."""
    return str(_fasa.policy_help())


def parse_policy(spec: str, model: Optional[Model] = None) -> Tuple[str, Dict[str, str]]:
    """Checks a policy spec ("name" or "name:key=value,...") and returns (name, options dict).
    Raises FasaError (a ValueError) with the engine's message. With a model, the policy is made
    for it (every option checked, a calibration file read); without, the name, the keys and the
    values' forms are checked."""
    f = "parse_policy"
    spec = _check.policy(f, "spec", spec)
    if model is not None:
        _check.one_of(f, "model", model, Model, "a fasa.Model or None")
    name, options = _fasa.check_policy(spec, model._m if model is not None else None)
    return str(name), dict(options)
