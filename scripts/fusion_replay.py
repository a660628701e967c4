#!/usr/bin/env python3
"""Replay `auto`'s fusion offline over `cortex-bench eval --dump` files, to tune `Fusion::TUNED`.

    cortex-bench eval --dataset ../shared/evals/locomo-dev --corpus-db <db> --dump locomo.jsonl
    cortex-bench eval --dataset ../shared/evals/scifact --split train --corpus-db <db> --dump scifact.jsonl
    python3 scripts/fusion_replay.py --locomo locomo.jsonl --locomo-corpus ../shared/evals/locomo-dev/corpus.jsonl \
        --scifact scifact.jsonl [--grid]

Mirrors crates/domain/src/fusion.rs (fuse, dense_trust), neighbours.rs (lift: the first 5
candidates lift the turn stored after them in their session to 0.8 of their relevance, the one
before to 0.6) and the pools of crates/service/src/search (auto 100, deep 300; dense hits below
MIN_DENSE_SIMILARITY dropped). With fill=True (as finds do), each
lexical candidate the dense list left out is fused at its own cosine (the dump's `lexcos`).
Experiments kept as options: rfill (BM25 of dense-only items from the deeper dumped lexical
list), dscale (cosines on a fixed scale, not the query's best). Not replayed: deep's typo
correction, recency ties.
Prints locomo-dev Recall@5 (all and per category) and SciFact nDCG@10 per setting.
"""
import argparse
import itertools
import json
import math

MIN_DENSE = 0.25


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def session_links(corpus_path):
    """doc id -> (previous doc of its session, next doc of its session), storage order."""
    docs = load(corpus_path)
    order, links = {}, {}
    for i, d in enumerate(docs):
        order[d["_id"]] = i
    for i, d in enumerate(docs):
        prev = docs[i - 1]["_id"] if i > 0 and same(docs[i - 1], d) else None
        nxt = docs[i + 1]["_id"] if i + 1 < len(docs) and same(docs[i + 1], d) else None
        links[d["_id"]] = (prev, nxt)
    return order, links


def same(a, b):
    return a.get("conversation") == b.get("conversation") and a.get("session") == b.get("session")


DEFAULT = dict(w=0.4, zero=0.2, agree=3, spread=0.2, depth=10, pool=100, next=0.8, prev=0.6,
               anchors=5, neighbours=True, lexnorm="max", adaptive=True, wmax=None, densenorm="max",
               lexk=100, lexf=1.0, densek=100, densef=1.0, lexpool=None, fill=True, rfill=False, dscale=None)


def trust(lex, dense, c):
    if not dense:
        return 0.0
    if not lex:
        return 1.0
    best = {k for k, _ in lex[: c["depth"]]}
    shared = sum(1 for k, _ in dense[: c["depth"]] if k in best)
    agreement = min(1.0, (1 + shared) / (1 + c["agree"]))
    first = dense[0][1]
    tenth = dense[c["depth"] - 1][1] if len(dense) >= c["depth"] else MIN_DENSE
    distinct = min(1.0, max(0.0, (first - tenth) / c["spread"]))
    return agreement * distinct


def fuse(lex, dense, c, filled=()):
    if not c["adaptive"]:
        t = 1.0
    else:
        t = trust(lex, dense, c)
    w = c["w"]
    dw = (1 - w) * t
    if c["wmax"] is not None:
        # Lexical weight falls as trust rises: w at trust 0, wmax at trust 1.
        w = c["w"] + (c["wmax"] - c["w"]) * t
        dw = (1 - w) * t
    lt = max((s for _, s in lex), default=0.0)
    if c["lexnorm"] == "max":
        lpart = lambda s: max(s, 0.0) / lt if lt > 0 else 0.0
    elif c["lexnorm"] == "rank":
        # Scaled between a share of the score at rank lexk (0 when the list is shorter) and the best.
        lo = c["lexf"] * lex[c["lexk"] - 1][1] if len(lex) >= c["lexk"] else 0.0
        lpart = lambda s: max(s - lo, 0.0) / (lt - lo) if lt > lo else 0.0
    zero = c["zero"]
    if c["densenorm"] == "rank" and len(dense) >= c["densek"]:
        zero = max(zero, dense[c["densek"] - 1][1] * c["densef"])
    dt = max((s for _, s in list(dense) + list(filled)), default=0.0)
    if c["dscale"] is not None:
        # Cosines from the zero on a fixed scale, not the query's best: a weak best counts less.
        dpart = lambda s: min(max(s - zero, 0.0) / c["dscale"], 1.0)
    else:
        dpart = lambda s: max(s - zero, 0.0) / (dt - zero) if dt > zero else 0.0
    scores, order = {}, []
    for k, s in lex:
        if k not in scores:
            scores[k] = 0.0
            order.append(k)
        scores[k] += w * lpart(s)
    for k, s in list(dense) + list(filled):
        if k not in scores:
            scores[k] = 0.0
            order.append(k)
        scores[k] += dw * dpart(s)
    return scores, order


def rank(q, c, links, order_of, mode):
    pool = c["pool"]
    lex = [(k, s) for k, s in q["any"][: c["lexpool"] or pool]]
    if mode == "fast":
        dense = None
    else:
        dense = [(k, s) for k, s in q["dense"][:pool] if s >= MIN_DENSE]
    if dense is None:
        lt = max((s for _, s in lex), default=0.0)
        rel = {k: (s / lt if lt > 0 else 0.0) for k, s in lex}
        seq = [k for k, _ in lex]
    else:
        filled = []
        if c["fill"]:
            # The exact cosine of each lexical candidate the dense list left out.
            cos = dict((k, s) for k, s in q.get("lexcos", []))
            have = {k for k, _ in dense}
            filled = [(k, cos[k]) for k, _ in lex if k not in have and k in cos]
        if c["rfill"]:
            # Experiment: BM25 of dense candidates beyond the lexical pool, from the deeper dump.
            deep = dict((k, s) for k, s in q["any"])
            have = {k for k, _ in lex}
            lex = lex + [(k, deep[k]) for k, _ in dense if k not in have and k in deep]
        scores, seq = fuse(lex, dense, c, filled)
        best = max(scores.values(), default=0.0)
        rel = {k: (min(1.0, max(0.0, v / best)) if best > 0 else 0.0) for k, v in scores.items()}
        seq = sorted(seq, key=lambda k: -scores[k])
        if links and c["neighbours"]:
            base = dict(rel)
            for a in seq[: c["anchors"]]:
                prev, nxt = links.get(a, (None, None))
                for n, share in ((prev, c["prev"]), (nxt, c["next"])):
                    if n is None:
                        continue
                    v = share * base[a]
                    if n in rel:
                        rel[n] = max(rel[n], v)
                    else:
                        rel[n] = v
                        seq.append(n)
    # Final order: relevance, then the later-stored item first (recency), as a find sorts.
    return sorted(seq, key=lambda k: (-round(rel[k], 12), -order_of.get(k, 0)))[:10]


def metrics(ranked, relevant):
    gain = lambda d: relevant.get(d, 0.0)
    dcg = sum(gain(d) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:10]))
    total = max(len(ideal), 1)
    r5 = sum(1 for d in ranked[:5] if gain(d) > 0) / total
    return (dcg / idcg if idcg > 0 else 0.0), r5


def score(queries, c, links, order_of, mode):
    by = {}
    for q in queries:
        nd, r5 = metrics(rank(q, c, links, order_of, mode), q["relevant"])
        for cat in ("all", q.get("category")):
            if cat is None:
                continue
            t = by.setdefault(cat, [0.0, 0.0, 0])
            t[0] += nd
            t[1] += r5
            t[2] += 1
    return {k: (v[0] / v[2], v[1] / v[2]) for k, v in by.items()}


CATS = ["adversarial", "multi-hop", "open-domain", "single-hop", "temporal"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo")
    ap.add_argument("--locomo-corpus")
    ap.add_argument("--scifact")
    ap.add_argument("--scifact-corpus")
    ap.add_argument("--set", action="append", default=[], help="key=value over the defaults")
    ap.add_argument("--grid", action="append", default=[], help="key=v1,v2,... (a grid axis)")
    args = ap.parse_args()
    def parse(v):
        if v in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[v]
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return v
    base = dict(DEFAULT)
    for kv in args.set:
        k, v = kv.split("=")
        base[k] = parse(v)
    locomo = load(args.locomo) if args.locomo else []
    scifact = load(args.scifact) if args.scifact else []
    order_l, links_l = session_links(args.locomo_corpus) if args.locomo_corpus else ({}, {})
    order_s = {}
    if args.scifact_corpus:
        with open(args.scifact_corpus) as f:
            order_s = {json.loads(line)["_id"]: i for i, line in enumerate(f)}
    if locomo:
        fast = score(locomo, base, links_l, order_l, "fast")
        print("locomo fast R@5", " ".join(f"{c[:5]} {fast[c][1]:.4f}" for c in ["all"] + CATS))
    if scifact:
        print("scifact fast nDCG@10 %.4f" % score(scifact, base, {}, order_s, "fast")["all"][0])
    axes = [(kv.split("=")[0], [parse(v) for v in kv.split("=")[1].split(",")]) for kv in args.grid]
    for values in itertools.product(*[vs for _, vs in axes]):
        c = dict(base)
        c.update({k: v for (k, _), v in zip(axes, values)})
        label = " ".join(f"{k}={v}" for (k, _), v in zip(axes, values)) or "default"
        out = [label]
        ok = True
        if locomo:
            s = score(locomo, c, links_l, order_l, "auto")
            below = [cat for cat in CATS if s[cat][1] < fast[cat][1] - 1e-9]
            ok = not below and s["all"][1] >= 0.63
            out.append("locomo R@5 %.4f nDCG %.4f [%s]%s" % (s["all"][1], s["all"][0],
                       " ".join(f"{s[cat][1]:.3f}" for cat in CATS), "" if not below else " below:" + ",".join(below)))
        if scifact:
            s = score(scifact, c, {}, order_s, "auto")
            out.append("scifact nDCG %.4f R@5 %.4f" % (s["all"][0], s["all"][1]))
        print(("  " if ok else "x ") + " | ".join(out), flush=True)


if __name__ == "__main__":
    main()
