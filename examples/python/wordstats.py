"""Word statistics of text documents, with S-Net boxes written in Python.

    python3 wordstats.py [--nodes N] [FILE...]   # the built-in sample without files
    python3 -m snet run wordstats.snet --boxes wordstats.py -i docs.xml

`words` splits a document into lower-case words, `count` counts the words of
more than three letters and keeps the five most frequent (a string, so
that the XML record format can hold it). The program (wordstats.snet) places `count`
on node <doc> % 2: with --nodes 2 the documents are counted in two
processes, each with its own interpreter.
"""

import argparse
import collections
import os
import re

import snet

WORD = re.compile(r"[a-z']+")


def words(text, doc):
    return {"words": WORD.findall(text.lower()), "<doc>": doc}


def count(words):
    counts = collections.Counter(w for w in words if len(w) > 3)
    top = ", ".join(f"{w} {n}" for w, n in counts.most_common(5))
    return {"top": top, "<nwords>": len(words)}


SAMPLE = [
    "The network is the program: boxes are sequential functions, and the "
    "coordination language wires them into a streaming network.",
    "Records flow through the network; each box takes the labels it names "
    "and the others flow around it, to the boxes behind it.",
    "Placement puts boxes on nodes, and nodes are processes, so Python "
    "boxes on two nodes run on two cores at once.",
    "Streams keep their order where the network is deterministic, and "
    "records overtake each other where it is not.",
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="*")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--write-input", metavar="XML", help="write the documents as a record stream")
    args = p.parse_args()
    texts = [open(f, encoding="utf-8").read() for f in args.files] or SAMPLE
    records = [{"text": t, "<doc>": i} for i, t in enumerate(texts)]
    if args.write_input:
        snet.write_xml(records, args.write_input)
        return
    net = snet.Network.from_file(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "wordstats.snet"))
    net.add_box("words", words)
    net.add_box("count", count)
    for out in sorted(net.run(records, nodes=args.nodes), key=lambda r: r["<doc>"]):
        print(f"document {out['<doc>']}: {out['<nwords>']} words; most frequent: {out['top']}")


if __name__ == "__main__":
    main()
