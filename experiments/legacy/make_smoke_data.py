"""Write a small CIFAR-10-shaped data set (official python format) for the ported 2018 examples.

    python experiments/legacy/make_smoke_data.py runs/legacy-data
    export NORD_LEGACY_DATA=runs/legacy-data
    cd runs && python ../experiments/legacy/genetic_example.py -e 1 --untrained

The 2018 examples take no data argument; ``NORD_LEGACY_DATA`` points their evaluators at
this folder instead of the official CIFAR-10 (see ``nord.legacy``).
"""
import argparse
import sys

from nord.legacy.smoke import write_cifar10


def main(args) -> int:
    folder = write_cifar10(args.root, n_train=args.train, n_test=args.test, seed=args.seed)
    print(f"wrote {args.train} training and {args.test} test images to {folder}")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", help="folder to write cifar-10-batches-py/ into")
    p.add_argument("--train", type=int, default=100, help="training images (at least 5)")
    p.add_argument("--test", type=int, default=40, help="test images")
    p.add_argument("--seed", type=int, default=0)
    sys.exit(main(p.parse_args()))
