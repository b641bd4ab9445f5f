"""COCO instances files packed by forkfeed-shard (--coco-images) and read back by the Loader
as boxes, labels and iscrowd: each image once, in the order of their ids, its annotations
in the file's order, crowds and images without annotations as the options say; a file that
is not COCO's, or names what is not there, refused naming the entry, with no shard written;
a file larger than the memory it may take refused saying so."""

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import forkfeed

from conftest import BIN_DIR

FIELDS = "image=jpg, boxes=json:boxes(key=boxes, format=xywh), labels=json:per_box(key=labels), " \
         "crowd=json:per_box(key=iscrowd), area=json:per_box(key=area, dtype=float32)"


def coco_file(root: pathlib.Path, images: list, annotations: list, categories: list, **extra) -> pathlib.Path:
    """A COCO instances file beside the folder "train" of 64 x 64 JPEGs, one per image entry."""
    (root / "train").mkdir(parents=True, exist_ok=True)
    for image in images:
        if "file_name" in image:
            Image.fromarray(np.full((64, 64, 3), 90, np.uint8)).save(root / "train" / image["file_name"])
    path = root / "instances.json"
    doc = {"info": {"year": 2017, "nested": [{"a": [1, [2]]}]}, "licenses": [{"id": 1}], "images": images,
           "annotations": annotations, "categories": categories, **extra}
    path.write_text(json.dumps(doc))
    return path


def pack(root: pathlib.Path, annotations: pathlib.Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN_DIR / "forkfeed-shard"), "--from", str(annotations), "--coco-images",
                           str(root / "train"), "--out", str(root / "shards" / "s-%02d.tar"),
                           "--shard-size", "2", *flags], capture_output=True, text=True)


CATEGORIES = [{"id": 18, "name": "dog"}, {"id": 1, "name": "person"}, {"id": 90, "name": "toothbrush"}]
IMAGES = [{"id": 42, "file_name": "b.jpg", "width": 64, "height": 64},
          {"id": 7, "file_name": "a.jpg", "width": 64, "height": 64},
          {"id": 99, "file_name": "c.jpg", "width": 64, "height": 64}]
ANNOTATIONS = [
    {"id": 1, "image_id": 42, "category_id": 18, "bbox": [1.5, 2.25, 10, 20], "area": 150.5, "iscrowd": 0,
     "segmentation": [[1, 2, 3, 4, 5, 6]]},
    {"id": 2, "image_id": 7, "category_id": 90, "bbox": [0, 0, 64, 64], "area": 4096, "iscrowd": 0,
     "segmentation": [[0, 0, 64, 0, 64, 64]]},
    {"id": 3, "image_id": 42, "category_id": 1, "bbox": [30, 30, 20, 10], "area": 200, "iscrowd": 1,
     "segmentation": {"counts": [0, 5, 10], "size": [64, 64]}},
    {"id": 4, "image_id": 42, "category_id": 1, "bbox": [40, 5, 4.5, 8], "area": 36, "iscrowd": 0,
     "segmentation": [[40, 5, 44, 5, 44, 13]]},
]


def samples(root: pathlib.Path) -> list:
    out = []
    with forkfeed.Loader(shards=str(root / "shards"), fields=FIELDS, transform="CenterCrop(64)", batch_size=2,
                         workers=1, shuffle=False) as loader:
        for batch in loader:
            out += [dict(key=key, boxes=b.tolist(), labels=l.tolist(), crowd=c.tolist(), area=a.tolist())
                    for key, b, l, c, a in zip(batch["__key__"], batch["boxes"], batch["labels"],
                                               batch["crowd"],
                                               batch["area"])]
    return out


def test_a_coco_file_packs_into_shards_the_loader_reads_as_boxes_and_labels(tmp_path):
    done = pack(tmp_path, coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES))
    assert done.returncode == 0, done.stderr
    assert "wrote 3 samples in 2 shards" in done.stdout
    got = samples(tmp_path)
    # By id: 7 (a.jpg), 42 (b.jpg), 99 (c.jpg, no annotation: no boxes); the crowd dropped;
    # boxes XYXY from COCO's x, y, w, h; labels the category ids.
    assert [s["key"] for s in got] == ["a", "b", "c"]
    assert got[0]["boxes"] == [[0, 0, 64, 64]] and got[0]["labels"] == [90]
    assert got[1]["boxes"] == [[1.5, 2.25, 11.5, 22.25], [40, 5, 44.5, 13]]
    assert got[1]["labels"] == [18, 1] and got[1]["crowd"] == [0, 0] and got[1]["area"] == [150.5, 36]
    assert got[2]["boxes"] == [] and got[2]["labels"] == []


def test_contiguous_labels_kept_crowds_and_dropped_empty_images(tmp_path):
    done = pack(tmp_path, coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES), "--coco-labels", "contiguous",
                "--coco-crowd", "keep", "--coco-empty", "drop")
    assert done.returncode == 0, done.stderr
    got = samples(tmp_path)
    assert [s["key"] for s in got] == ["a", "b"]  # c.jpg has no annotation
    # ids 1, 18, 90 are labels 1, 2, 3; the crowd kept with iscrowd 1, in the file's order.
    assert got[0]["labels"] == [3]
    assert got[1]["labels"] == [2, 1, 1] and got[1]["crowd"] == [0, 1, 0]
    assert got[1]["boxes"][1] == [30, 30, 50, 40]


# Annotations are named by their id, which a user searches the file for; by their place in
# "annotations" (from 0) only where they have none.
@pytest.mark.parametrize("change,message", [
    (lambda d: d["annotations"].append({"id": 9, "image_id": 5, "category_id": 1, "bbox": [0, 0, 1, 1]}),
     "annotation id 9 is of image_id 5, which no image has"),
    (lambda d: d["annotations"].append({"image_id": 5, "category_id": 1, "bbox": [0, 0, 1, 1]}),
     r"annotation #4 \(which has no integer id\) is of image_id 5, which no image has"),
    (lambda d: d["annotations"].append({"id": 9, "image_id": 7, "category_id": 3, "bbox": [0, 0, 1, 1]}),
     "annotation id 9 is of category_id 3, which no category has"),
    (lambda d: d["annotations"].append({"id": 9, "image_id": 7, "category_id": 1, "bbox": [0, 0, 1]}),
     r"annotation id 9: its bbox holds 3 numbers; COCO's is \[x, y, w, h\]"),
    (lambda d: d["annotations"].append({"id": 9, "image_id": 7, "category_id": 1, "bbox": ["1", 2, 3, 4]}),
     r"annotation id 9: its bbox holds the string \"1\" where COCO's \[x, y, w, h\] has numbers"),
    (lambda d: d["annotations"].append({"id": 9, "image_id": 7, "category_id": 1, "bbox": [[0, 0], 1, 1]}),
     r"annotation id 9: its bbox holds a list where COCO's \[x, y, w, h\] has numbers"),
    (lambda d: d["annotations"].append({"id": 9, "category_id": 1, "bbox": [0, 0, 1, 1]}),
     "annotation id 9 has no integer image_id"),
    (lambda d: d["images"].append({"id": 42, "file_name": "d.jpg"}), "images #0 and #3 both have id 42"),
    (lambda d: d["images"].append({"id": 43, "file_name": "a.jpg"}),
     "images #1 and #3 are both the file a.jpg"),
    # One file under two spellings is one file (ids 7 and 43 are not neighbours in the
    # shards, so no reader would merge them: it would be packed twice, under one key).
    (lambda d: d["images"].append({"id": 43, "file_name": "./a.jpg"}),
     r"images #1 and #3 are both the file a.jpg \(#3 names it \"./a.jpg\"\): one file is one sample"),
    (lambda d: d["images"].append({"id": 43, "file_name": "../train/a.jpg"}),
     r"images #1 and #3 are both the file a.jpg \(#3 names it \"../train/a.jpg\"\)"),
    (lambda d: d["images"].append({"id": 43}), r"image #3 \(id 43\) has no file_name"),
    (lambda d: d["images"].append({"id": "x", "file_name": "d.jpg"}), "image #3 has no integer id"),
    (lambda d: d.pop("images"), "instances.json: no \"images\" list"),
])
def test_a_file_that_is_not_cocos_is_refused_naming_the_entry_and_writes_nothing(tmp_path, change, message):
    path = coco_file(tmp_path, IMAGES + [{"id": 1000, "file_name": "d.jpg"}], ANNOTATIONS, CATEGORIES)
    doc = json.loads(path.read_text())
    doc["images"].pop()  # d.jpg exists as a file, its entry as the case makes it
    change(doc)
    path.write_text(json.dumps(doc))
    done = pack(tmp_path, path)
    assert done.returncode == 1, done.stdout
    assert "instances.json" in done.stderr
    assert re.search(message, done.stderr), done.stderr
    assert not (tmp_path / "shards").exists()


def test_not_json_and_a_missing_folder_are_refused(tmp_path):
    path = coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES)
    path.write_text(path.read_text()[:-40])
    done = pack(tmp_path, path)
    assert done.returncode == 1 and "instances.json: not JSON at byte" in done.stderr, done.stderr
    done = subprocess.run([str(BIN_DIR / "forkfeed-shard"), "--from", str(path), "--coco-images",
                           str(tmp_path / "nowhere"), "--out", str(tmp_path / "s-%d.tar")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--coco-images" in done.stderr and "is not a folder" in done.stderr


# Python's json (and so pycocotools) refuses each: "Extra data", or a decode error. A NUL
# byte outside a string ends the text for nlohmann's lexer, which then took what followed
# for nothing.
@pytest.mark.parametrize("tail,message", [
    (b" garbage", r"not JSON: more follows the end of its value at byte \d+: 'garbage'"),
    (b'{"images": []}', r"not JSON: more follows the end of its value at byte \d+: '\{\"images\": \[\]\}'"),
    (b"\x00garbage", r"not JSON: a NUL byte at byte \d+, outside any string"),
])
def test_more_after_the_json_value_is_refused_saying_so(tmp_path, tail, message):
    path = coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES)
    path.write_bytes(path.read_bytes() + tail)
    done = pack(tmp_path, path)
    assert done.returncode == 1, done.stdout
    assert re.search("instances.json: " + message, done.stderr), done.stderr
    assert "double's range" not in done.stderr


def test_a_file_that_is_not_utf8_is_refused_saying_so(tmp_path):
    # A file saved as Latin-1: "caf\xe9" where UTF-8 has "caf\xc3\xa9".
    path = coco_file(tmp_path, IMAGES, ANNOTATIONS, [dict(c, name="cafe") for c in CATEGORIES])
    text = path.read_bytes()
    path.write_bytes(text.replace(b'"cafe"', b'"caf\xe9"', 1))
    at = text.index(b'"cafe"') + 4
    done = pack(tmp_path, path)
    assert done.returncode == 1, done.stdout
    assert (f"instances.json: not JSON: the string at byte {at - 4} is not UTF-8 (byte {at} is 0xe9): JSON "
            "text is UTF-8") in done.stderr, done.stderr
    assert "double's range" not in done.stderr


def test_a_file_holding_more_than_its_memory_bound_is_refused_saying_so(tmp_path):
    # 20,000 annotations: about 1.9 MiB held, over a bound of 1 MiB.
    many = [{"id": n, "image_id": 7, "category_id": 1, "bbox": [n % 50, 1, 2, 3], "area": 6, "iscrowd": 0}
            for n in range(20_000)]
    path = coco_file(tmp_path, IMAGES, many, CATEGORIES)
    done = pack(tmp_path, path, "--coco-max-mib", "1")
    assert done.returncode == 1, done.stdout
    assert re.search("more images and annotations than 1 MiB of memory hold .*: raise --coco-max-mib",
                     done.stderr), done.stderr
    assert pack(tmp_path, path).returncode == 0


def padded_file(root: pathlib.Path, padding: str, mib: int = 4) -> pathlib.Path:
    """A COCO file holding `mib` MiB that its records do not use: spaces before a value, an
    "info" string, or an "info" of empty lists."""
    path = coco_file(root, IMAGES, ANNOTATIONS, CATEGORIES)
    text = path.read_text()
    filler = {"spaces": '"info": ' + " " * (mib << 20) + "{}",  # no string nor number after the run
              "string": '"info": "' + "x" * (mib << 20) + '"',
              "lists": '"info": [' + "[]," * ((mib << 20) // 3) + "[]]"}[padding]
    path.write_text(text[:-1] + ", " + filler + "}")
    return path


@pytest.mark.parametrize("padding,message", [
    ("string", r"a string of 4.0 MiB at byte \d+"),
    ("lists", r"a stretch of 4.0 MiB of brackets and commas \(empty lists or objects\) at byte \d+"),
])
def test_what_the_json_parser_holds_of_unused_text_counts_against_the_memory_bound(tmp_path, padding,
                                                                                   message):
    # nlohmann's lexer keeps every byte from one value's start to the next's, and a string
    # twice, however little of it is used.
    path = padded_file(tmp_path, padding)
    done = pack(tmp_path, path, "--coco-max-mib", "1")
    assert done.returncode == 1, done.stdout
    assert re.search("instances.json: " + message + r", which the JSON parser holds whole.*raise "
                                                    r"--coco-max-mib",
                     done.stderr), done.stderr
    done = pack(tmp_path, path, "--coco-max-mib", "64")
    assert done.returncode == 0, done.stderr


# Run from a fresh interpreter: a child's peak memory counts what it held before exec(),
# which for a child of pytest is pytest's.
PEAK_MEMORY = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"""


def peak_memory_kib(root: pathlib.Path, annotations: pathlib.Path, *flags: str) -> int:
    """forkfeed-shard's peak resident memory (KiB) packing `annotations`; it must succeed."""
    out = root / annotations.stem
    done = subprocess.run([sys.executable, "-c", PEAK_MEMORY, str(BIN_DIR / "forkfeed-shard"), "--from",
                           str(annotations), "--coco-images", str(root / "train"), "--out",
                           str(out / "s-%02d.tar"),
                           *flags], capture_output=True, text=True, check=True)
    status, peak = done.stdout.split()
    assert status == "0", done.stderr
    return int(peak)


def test_a_run_of_whitespace_costs_no_memory_however_long(tmp_path):
    # The parser is passed one byte of each run, and the file's pages are given back behind
    # it: 128 MiB of spaces took 3 times that (the mapped pages, and the lexer's buffer as it
    # doubled) under any --coco-max-mib.
    plain = coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES)
    base = peak_memory_kib(tmp_path, plain)
    padded = padded_file(tmp_path, "spaces", mib=128).rename(tmp_path / "padded.json")
    assert peak_memory_kib(tmp_path, padded, "--coco-max-mib", "1") - base < 40 << 10


def test_an_indented_file_packs_within_a_small_memory_bound(tmp_path):
    path = coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES)
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4))
    done = pack(tmp_path, path, "--coco-max-mib", "1")
    assert done.returncode == 0, done.stderr


# ---- segmentations ------------------------------------------------------------------------


def rle_string(counts: list) -> str:
    """pycocotools' compressed RLE (rleToString): 5 bits a character from '0', a sixth for "more",
    each count after the second as the difference from the one two before."""
    out = []
    for i, x in enumerate(counts):
        x -= counts[i - 2] if i > 2 else 0
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


def runs(mask: np.ndarray) -> list:
    """The counts of a binary mask down its columns (COCO's RLE), 0s first."""
    flat = mask.T.ravel()
    counts, current, n = [], 0, 0
    for value in flat:
        if value != current:
            counts.append(n)
            current, n = value, 0
        n += 1
    return counts + [n]


def masks_of(root: pathlib.Path, fields: str) -> dict:
    with forkfeed.Loader(shards=str(root / "shards"), fields=fields, transform="CenterCrop(64)", batch_size=4,
                         workers=1, shuffle=False) as loader:
        batch = loader.next_batch()
        return {key: batch.fields[list(batch.fields)[1]][i].numpy()
                for i, key in enumerate(batch.fields["__key__"])}


def segmentation_file(root: pathlib.Path, crowd_counts) -> pathlib.Path:
    """Two images: a (rectangles by polygon, one of two polygons, overlapping one another) and
    b (an uncompressed RLE and a compressed one, the latter a crowd)."""
    block = np.zeros((64, 64), np.uint8)
    block[40:50, 5:9] = 1  # rows 40-49, columns 5-8
    ring = np.zeros((64, 64), np.uint8)
    ring[10:20, 30:40] = 1
    ring[13:17, 33:37] = 0  # a hole, which polygons cannot draw
    annotations = [
        {"id": 1, "image_id": 7, "category_id": 18, "bbox": [2, 3, 8, 5], "iscrowd": 0,
         "segmentation": [[2, 3, 10, 3, 10, 8, 2, 8]]},  # columns 2-9, rows 3-7
        {"id": 2, "image_id": 7, "category_id": 1, "bbox": [6, 6, 10, 10], "iscrowd": 0,
         "segmentation": [[6, 6, 16, 6, 16, 16, 6, 16], [30, 30, 32, 30, 32, 31, 30, 31]]},
        {"id": 3, "image_id": 42, "category_id": 90, "bbox": [5, 40, 4, 10], "iscrowd": 0,
         "segmentation": {"counts": runs(block), "size": [64, 64]}},
        {"id": 4, "image_id": 42, "category_id": 1, "bbox": [30, 10, 10, 10], "iscrowd": 1,
         "segmentation": {"counts": crowd_counts(ring), "size": [64, 64]}},
    ]
    images = [{"id": 7, "file_name": "a.jpg", "width": 64, "height": 64},
              {"id": 42, "file_name": "b.jpg", "width": 64, "height": 64}]
    return coco_file(root, images, annotations, CATEGORIES)


def expected_pixels():
    a = np.zeros((64, 64), np.int64)
    first, second = np.zeros_like(a, bool), np.zeros_like(a, bool)
    first[3:8, 2:10] = True
    second[6:16, 6:16] = True
    second[30:31, 30:32] = True
    b_block = np.zeros_like(a, bool)
    b_block[40:50, 5:9] = True
    ring = np.zeros_like(a, bool)
    ring[10:20, 30:40] = True
    ring[13:17, 33:37] = False
    return first, second, b_block, ring


@pytest.mark.parametrize("compressed", [False, True])
def test_semantic_masks_are_the_labels_of_the_rasterised_segmentations_255_where_they_overlap(tmp_path,
                                                                                              compressed):
    path = segmentation_file(tmp_path, (lambda m: rle_string(runs(m))) if compressed else runs)
    done = pack(tmp_path, path, "--coco-masks", "semantic", "--coco-crowd", "keep",
                "--coco-labels", "contiguous")
    assert done.returncode == 0, done.stderr
    got = masks_of(tmp_path, "image=jpg, seg=seg.png:mask(fill=255)")
    first, second, block, ring = expected_pixels()
    a = np.zeros((64, 64), np.int64)
    a[first], a[second] = 2, 1  # dog (id 18) is label 2, person (id 1) label 1
    a[first & second] = 255
    b = np.zeros((64, 64), np.int64)
    b[block], b[ring] = 3, 1
    assert np.array_equal(got["a"], a), np.argwhere(got["a"] != a)[:5]
    assert np.array_equal(got["b"], b), np.argwhere(got["b"] != b)[:5]


def test_instance_masks_number_the_boxes_the_last_annotation_over_the_others(tmp_path):
    done = pack(tmp_path, segmentation_file(tmp_path, runs), "--coco-masks", "instance")
    assert done.returncode == 0, done.stderr
    got = masks_of(tmp_path, "image=jpg, inst=inst.png:mask(dtype=uint16)")
    first, second, block, _ = expected_pixels()
    a = np.zeros((64, 64), np.int64)
    a[first], a[second] = 1, 2
    b = np.zeros((64, 64), np.int64)
    b[block] = 1  # the crowd dropped: its box and its pixels
    assert np.array_equal(got["a"], a) and np.array_equal(got["b"], b)


@pytest.mark.parametrize("change,flags,message", [
    (lambda d: d["annotations"][2]["segmentation"].update(size=[64, 63]), [],
     r"image id 42: annotation id 3: its RLE's size is not its image's \[64, 64\]"),
    (lambda d: d["annotations"][2]["segmentation"].update(counts=[5, 6]), [],
     "annotation id 3: its RLE counts cover 11 pixels, its 64x64 image 4096"),
    (lambda d: d["annotations"][2]["segmentation"].update(counts="0\x7f"), [],
     "annotation id 3: its RLE counts are no compressed RLE string"),
    (lambda d: d["images"][0].pop("width"), [], r"image #0 \(id 7\) has no width and height"),
    (lambda d: None, ["--coco-labels", "ids"], None),
    (lambda d: d["categories"].append({"id": 300}) or d["annotations"][0].update(category_id=300),
     ["--coco-labels", "ids"], "annotation id 1 has label 300, and a semantic mask holds labels 1 to 254"),
    (lambda d: d["categories"].append({"id": -5}) or d["annotations"][0].update(category_id=-5),
     ["--coco-labels", "ids"], "annotation id 1 has label -5, and a semantic mask holds labels 1 to 254"),
])
def test_segmentations_that_do_not_fit_their_image_are_refused_naming_them(tmp_path, change, flags, message):
    path = segmentation_file(tmp_path, runs)
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    done = pack(tmp_path, path, "--coco-masks", "semantic", *flags)
    if message is None:  # category ids up to 90 fit a semantic mask
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 1, done.stdout
    assert re.search(message, done.stderr), done.stderr


def test_an_image_file_of_another_size_than_its_entry_is_refused(tmp_path):
    # Its boxes and masks are in the entry's pixels: packed with a file of another size, they
    # would land elsewhere on it.
    images = [dict(IMAGES[1], width=60)] + IMAGES[:1]
    done = pack(tmp_path, coco_file(tmp_path, images, ANNOTATIONS[:2], CATEGORIES))
    assert done.returncode == 1, done.stdout
    assert ("image id 7 (" in done.stderr and
            "a.jpg): the file is 64x64, its entry says 60x64" in done.stderr), done.stderr
    assert not list((tmp_path / "shards").glob("*.tar"))


@pytest.mark.parametrize("segmentation,message", [
    ([[0, 0, 1e8, 0, 0, 8]], "annotation id 2: its polygon's x 1e\\+08 lies far outside its 64x64 image"),
    ([[0, 0, float("nan"), 0, 0, 8]], None),  # NaN is no JSON: Python writes it, the parser refuses it
    ([[1, 2]], "its segmentation lists 2 numbers where pycocotools takes a polygon"),
    ({"counts": [4000, -4, 100], "size": [64, 64]},
     "its RLE counts hold -4, and a count of pixels is not negative"),
    ({"counts": [4000, 1.5, 94.5], "size": [64, 64]},
     "its RLE counts hold 1.5, and a count of pixels is whole"),
    ({"counts": [1 << 40, 4096], "size": [64, 64]},
     "its RLE counts hold 1099511627776, more than the 4096 pixels of its 64x64 image"),
    ({"counts": [4000, 90, 10], "size": [64, 64]}, "its RLE counts cover 4100 pixels, its 64x64 image 4096"),
])
def test_segmentations_that_cannot_be_drawn_are_refused_naming_the_annotation(tmp_path, segmentation,
                                                                              message):
    annotations = [dict(ANNOTATIONS[1], segmentation=segmentation)]
    done = pack(tmp_path, coco_file(tmp_path, IMAGES[1:2], annotations, CATEGORIES), "--coco-masks",
                "instance")
    assert done.returncode == 1, done.stdout
    assert re.search(message or "not JSON", done.stderr), done.stderr


# pycocotools raises on each of these (annToRLE indexes a string segmentation as an RLE,
# frPyObjects takes a polygon's numbers with np.array(p, dtype=np.double), which refuses a
# string or a list among them); packed, the annotation's box would be kept with its mask
# empty, or drawn from the numbers left.
@pytest.mark.parametrize("segmentation,message", [
    ([[0, 0, 10, 0, 10, 5, "x"]], r'its polygon #0 holds the string "x" where pycocotools takes numbers'),
    ([[0, 0, 10, 0, 10, 5], [0, 0, 10, 0, None, 5]],
     "its polygon #1 holds null where pycocotools takes numbers"),
    ([[0, 0, 10, 0, 10, 5, True]], "its polygon #0 holds true where pycocotools takes numbers"),
    ([[[1.5, 2], 10, 0, 10, 5, 0, 5]], "its polygon #0 holds a list where pycocotools takes numbers"),
    ("abc", r'its segmentation is the string "abc" where pycocotools takes a list of polygons or an RLE'),
    (7, "its segmentation is the number 7 where pycocotools takes a list of polygons or an RLE"),
    ([0, 0, 10, 0, 10, 5], r"its segmentation lists the number 0 where pycocotools takes a polygon \(a list"),
    ([{"counts": [0, 4096], "size": [64, 64]}],
     "its segmentation lists an object: pycocotools merges a list of RLEs, "
     "which forkfeed-shard does not read"),
    ({"counts": [0, "4096"], "size": [64, 64]},
     r'its RLE\'s counts hold the string "4096" where pycocotools'),
    ({"counts": 4096, "size": [64, 64]},
     r"its RLE's counts are the number 4096 where pycocotools takes a list"),
    ({"counts": [0, 4096], "size": [64, [64]]}, r"its RLE's size holds a list where pycocotools takes"),
])
def test_a_segmentation_pycocotools_cannot_read_is_refused_naming_the_annotation(tmp_path, segmentation,
                                                                                 message):
    annotations = [dict(ANNOTATIONS[1], id=14, segmentation=segmentation)]
    path = coco_file(tmp_path, IMAGES[1:2], annotations, CATEGORIES)
    done = pack(tmp_path, path, "--coco-masks", "semantic")
    assert done.returncode == 1, done.stdout
    assert re.search("instances.json: annotation id 14: " + message, done.stderr), done.stderr
    assert not (tmp_path / "shards").exists()  # refused as the file is read, before any shard
    assert pack(tmp_path, path).returncode == 0  # without masks, segmentations are not read


def test_a_first_polygon_of_four_numbers_is_a_bbox_as_pycocotools_reads_it(tmp_path):
    annotations = [dict(ANNOTATIONS[1], segmentation=[[5, 6, 20, 10], [40, 40, 2, 3]])]
    done = pack(tmp_path, coco_file(tmp_path, IMAGES[1:2], annotations, CATEGORIES), "--coco-masks",
                "instance")
    assert done.returncode == 0, done.stderr
    got = masks_of(tmp_path, "image=jpg, inst=inst.png:mask(dtype=uint16)")["a"]
    want = np.zeros((64, 64), np.int64)
    want[6:16, 5:25] = 1
    want[40:43, 40:42] = 1
    assert np.array_equal(got, want), np.argwhere(got != want)[:5]


def test_a_list_given_twice_is_refused(tmp_path):
    path = coco_file(tmp_path, IMAGES, ANNOTATIONS, CATEGORIES)
    text = path.read_text()
    path.write_text(text[:-1] + ', "images": []}')
    done = pack(tmp_path, path)
    assert done.returncode == 1 and 'has the key "images" twice' in done.stderr, done.stderr
