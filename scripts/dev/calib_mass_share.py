#!/usr/bin/env python3
"""How much of each head's |q.k| mass the dims FASA scores with carry, from a calibration file
(format version 3, which holds Double Sparsity's channel importance: the mean |q_c k_c| per key
dim). Per (layer, head) outside layer 0, with n_tip = a quarter of the FCs (FASA's default) and
2 n_tip channels for Double Sparsity (its default, the same key dims):

  ds        share of the importance in Double Sparsity's 2 n_tip heaviest channels
  fasa      share in the dims of FASA's n_tip FCs of highest contextual agreement (`ranked`)
  pairbest  share in the n_tip FCs of most summed importance (what `fcs=mass` scores with)
  overlap   share of Double Sparsity's channels that lie in FASA's FCs
  fasa_in_pairbest  share of FASA's FCs that are among the pairbest FCs

Prints the means over heads. Only the calibration text is read (no evaluation text).

  python3 scripts/dev/calib_mass_share.py CALIB.json [CALIB.json ...]
"""
import json
import sys


def shares(path):
    d = json.load(open(path, encoding="utf-8"))
    if d.get("version", 0) < 3:
        sys.exit(f"{path}: calibration version {d.get('version')} has no channel importance")
    dims = d["fc_dims"]  # [n_fc] the two key dims of each FC
    n_fc = len(dims)
    n_tip = n_fc // 4
    keys = ["ds", "fasa", "pairbest", "overlap", "fasa_in_pairbest"]
    acc = dict.fromkeys(keys, 0.0)
    n = 0
    for h in d["heads"]:
        if h["layer"] == 0:  # dense in both policies by default
            continue
        ci = h["channel_importance"]  # [head_dim]
        total = sum(ci)
        ds = sorted(range(len(ci)), key=lambda c: -ci[c])[: 2 * n_tip]
        fasa_fcs = h["ranked"][:n_tip]
        fasa_dims = [x for fc in fasa_fcs for x in dims[fc]]
        pair = sorted(range(n_fc), key=lambda j: -(ci[dims[j][0]] + ci[dims[j][1]]))[:n_tip]
        acc["ds"] += sum(ci[c] for c in ds) / total
        acc["fasa"] += sum(ci[c] for c in fasa_dims) / total
        acc["pairbest"] += sum(ci[x] for j in pair for x in dims[j]) / total
        acc["overlap"] += len(set(ds) & set(fasa_dims)) / len(ds)
        acc["fasa_in_pairbest"] += len(set(fasa_fcs) & set(pair)) / n_tip
        n += 1
    return n_fc, n_tip, n, {k: acc[k] / n for k in keys}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: calib_mass_share.py CALIB.json [CALIB.json ...]")
    print("| calibration | FCs | n_tip | heads | ds | fasa | pairbest | overlap | fasa_in_pairbest |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in sys.argv[1:]:
        n_fc, n_tip, n, m = shares(path)
        print(f"| {path} | {n_fc} | {n_tip} | {n} | {m['ds']:.3f} | {m['fasa']:.3f} | "
              f"{m['pairbest']:.3f} | {m['overlap']:.3f} | {m['fasa_in_pairbest']:.3f} |")


if __name__ == "__main__":
    main()
