"""An ImageFolder of ImageNet-sized JPEGs cut from photographs, for measuring loaders on real
photographic content rather than generated images: each image a random crop of 40-100% of
each side of one photograph, rescaled to a shorter side of 256-512 pixels and saved as a
baseline JPEG of quality 90 (photo_shards.cut); its class is the photograph it came from.

  /usr/bin/python3 tools/compare/photo_folder.py --photos DIR --out DIR [--images N]

Debian's python3-skimage ships some photographs (skimage/data: astronaut, coffee, chelsea,
rocket, ...): `apt-get download python3-skimage && dpkg -x python3-skimage_*.deb x` gives
them without installing the package. The same --photos, --images and --seed write the same
files; a folder already written with them is kept."""
import argparse
import pathlib
import random
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import photo_shards  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", required=True, help="folder of photographs (JPEG or PNG) to cut from")
    parser.add_argument("--out", required=True, help="the ImageFolder to write (one class per photograph)")
    parser.add_argument("--images", type=int, default=2048, help="images to write (default 2048)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.images < 1:
        parser.error("--images must be at least 1")

    out = pathlib.Path(args.out)
    spec = f"photos={pathlib.Path(args.photos).resolve()} images={args.images} seed={args.seed}"
    marker = out / ".forkfeed-photo-folder"  # written last: an interrupted folder is rewritten
    if marker.exists() and marker.read_text() == spec:
        print(f"photo_folder.py: {out} already holds these images", file=sys.stderr)
        return 0
    sources = photo_shards.photo_sources(pathlib.Path(args.photos), "photo_folder.py")
    rng = random.Random(args.seed)
    out.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    for n in range(args.images):
        source = n % len(sources)
        folder = out / f"photo{source:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"{n:07d}.jpg").write_bytes(photo_shards.jpeg(photo_shards.cut(sources[source], rng)))
        if (n + 1) % 256 == 0:
            print(f"\rphoto_folder.py: {n + 1}/{args.images}", end="", file=sys.stderr)
    print(file=sys.stderr)
    marker.write_text(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
