"""examples/train_imagenet.py runs, and a run stopped by --steps or Ctrl-C then --resume'd
trains on exactly the batches of an uninterrupted run: the same samples and the same weights."""

import os
import pathlib
import re
import signal
import subprocess
import sys

import pytest
import torch

from conftest import BIN_DIR

pytest.importorskip("torchvision", reason="the example trains torchvision's ResNet-18 (python3-torchvision)")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_imagenet.py"
# Small enough for a CPU: 50 images of 64x64, 6 batches of 8 per epoch.
QUICK = ["--size", "64", "--batch-size", "8", "--workers", "2", "--epochs", "2"]


def command(dataset, checkpoint, *args):
    return [sys.executable, str(EXAMPLE), "--data", str(dataset), "--checkpoint", str(checkpoint), *QUICK,
            *args]


def train(dataset, checkpoint, *args):
    result = subprocess.run(command(dataset, checkpoint, *args), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def same_training(a, b):
    """Whether two checkpoints hold the same position and bit for bit the same weights."""
    a, b = torch.load(a), torch.load(b)
    return ((a["epoch"], a["batch"], a["step"], a["loader"])
            == (b["epoch"], b["batch"], b["step"], b["loader"])
            and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"]))


def trained_per_epoch(*outputs):
    """{epoch: [samples, label sum]} over the runs, from their "epoch E: N samples, label sum S" lines."""
    total = {}
    for out in outputs:
        for epoch, samples, label_sum in re.findall(r"^epoch (\d+): (\d+) samples, label sum (\d+)", out,
                                                    re.M):
            sums = total.setdefault(int(epoch), [0, 0])
            sums[0] += int(samples)
            sums[1] += int(label_sum)
    return total


def test_resume_mid_epoch_trains_as_one_run(dataset, tmp_path):
    whole = train(dataset, tmp_path / "whole.pt")
    first = train(dataset, tmp_path / "cut.pt", "--steps", "3")
    assert "checkpoint at epoch 0, batch 3, step 3" in first
    rest = train(dataset, tmp_path / "cut.pt", "--resume")
    assert "resuming at epoch 0, batch 3 of 6, step 3" in rest
    assert trained_per_epoch(whole) == trained_per_epoch(first, rest)
    assert trained_per_epoch(whole)[1][0] == 48  # drop_last: 6 batches of 8 of 50 images
    assert "checkpoint at epoch 2, batch 0, step 12" in whole
    assert same_training(tmp_path / "whole.pt", tmp_path / "cut.pt")

    # Ctrl-C in the second epoch, sent to the process group as a terminal sends it.
    run = subprocess.Popen(command(dataset, tmp_path / "stopped.pt"), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    for line in run.stdout:
        if line.startswith("epoch 0:"):
            break
    os.killpg(run.pid, signal.SIGINT)
    out = run.communicate(timeout=120)[0]
    assert run.returncode in (0, 130), out  # 0: it ended before the signal came
    train(dataset, tmp_path / "stopped.pt", "--resume")
    assert same_training(tmp_path / "whole.pt", tmp_path / "stopped.pt")


def test_every_rank_of_a_torchrun_job_resumes_from_its_own_state(dataset, tmp_path):
    """A loader's state resumes only the rank that took it: each rank saves its own."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1",
                "--standalone", "--nproc_per_node", "2"]
    quick = ["--size", "32", "--batch-size", "8", "--workers", "1", "--steps", "2"]
    runs = []
    for resume in ([], ["--resume"]):
        run = subprocess.run([*torchrun, str(EXAMPLE), "--data", str(dataset), "--checkpoint",
                              str(tmp_path / "ck.pt"), *quick, *resume],
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stdout + run.stderr
        runs.append(run.stdout)
    assert "resuming at epoch 0, batch 2 of 3, step 2" in runs[1], runs[1]
    for rank in (0, 1):  # each rank's own state, of the checkpoint's step
        saved = torch.load(tmp_path / f"ck.pt.rank{rank}")
        assert (saved["loader"]["order"]["rank"], saved["step"], saved["world_size"]) == (rank, 4, 2), saved


def test_torch_dataloader_runs_and_resumes(dataset, tmp_path):
    first = train(dataset, tmp_path / "torch.pt", "--loader", "torch", "--steps", "2")
    assert "checkpoint at epoch 0, batch 2, step 2" in first
    rest = train(dataset, tmp_path / "torch.pt", "--loader", "torch", "--resume", "--steps", "5")
    assert "resuming at epoch 0, batch 2 of 6, step 2" in rest
    assert "checkpoint at epoch 1, batch 1, step 7" in rest
    assert {epoch: n for epoch, (n, _) in trained_per_epoch(first, rest).items()} == {0: 48, 1: 8}


def test_resnet50_v2_recipe_mixes_a_resumed_run_as_an_uninterrupted_one(dataset, tmp_path):
    # Its pipeline runs in forkfeed's workers; MixUp or CutMix, keyed by (seed, epoch, batch),
    # in the loop: the weights are bit for bit those of one run only if both repeat.
    recipe = ["--recipe", "resnet50-v2", "--epochs", "1"]
    whole = train(dataset, tmp_path / "whole.pt", *recipe, "--val", str(dataset))
    assert re.search(r"^epoch 0: top-1 [0-9.]+ on ", whole, re.M), whole
    train(dataset, tmp_path / "cut.pt", *recipe, "--steps", "2")
    train(dataset, tmp_path / "cut.pt", *recipe, "--resume")
    assert same_training(tmp_path / "whole.pt", tmp_path / "cut.pt")


def test_help_names_every_option():
    out = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True,
                         check=True).stdout
    for option in ("--loader", "--epochs", "--steps", "--size", "--batch-size", "--workers", "--checkpoint",
                   "--resume", "--recipe", "resnet50-v2", "--val", "torchrun"):
        assert option in out


def run_on_shards(tmp_path, script: str, members: str, images: int, side: int, *args: str) -> str:
    """examples/`script` on two shards of `images` forkfeed-mkdata samples of `members`
    (sides `side` to twice it), 2 epochs: its output."""
    subprocess.run([str(BIN_DIR / "forkfeed-mkdata"), "--out", str(tmp_path), "--images", str(images),
                    "--min-side", str(side), "--max-side", str(2 * side), "--format", "wds",
                    "--shard-size", str(images // 2), "--fields", members],
                   check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run([sys.executable, str(EXAMPLE.parent / script), "--shards",
                             f"{tmp_path}/shard-{{000000..000001}}.tar", "--epochs", "2", *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("script,unit", [("train_clip.py", "pairs"), ("train_simclr.py", "images")])
def test_the_multi_field_examples_train_on_shards(tmp_path, script, unit):
    # examples/train_clip.py (an image and its caption) and train_simclr.py (two views of one
    # image), on shards of 40 images with captions: 2 epochs of 2 batches of 16.
    out = run_on_shards(tmp_path, script, "jpg,txt", 40, 24, "--size", "32", "--batch-size", "16")
    losses = re.findall(rf"^epoch (\d): 32 {unit}, mean loss ([0-9.]+)$", out, re.M)
    assert [epoch for epoch, _ in losses] == ["0", "1"], out
    assert all(0 < float(loss) < 100 for _, loss in losses)


def test_the_segmentation_example_trains_on_images_and_masks(tmp_path):
    # examples/train_segmentation.py on 40 images with their seg.png masks: 2 epochs of 2
    # batches of 16, the masks moved with their images; the loss falls as it learns them.
    out = run_on_shards(tmp_path, "train_segmentation.py", "jpg,seg.png", 40, 24, "--size", "32",
                        "--batch-size", "16")
    epochs = re.findall(r"^epoch (\d): 32 images, mean loss ([0-9.]+), pixel accuracy ([0-9.]+)$", out, re.M)
    assert [e for e, _, _ in epochs] == ["0", "1"], out
    assert all(0 < float(loss) < 100 and 0 <= float(accuracy) <= 1 for _, loss, accuracy in epochs)


def test_the_detection_example_trains_faster_rcnn_on_images_and_their_boxes(tmp_path):
    # examples/train_detection.py on 16 images with their boxes.json: 2 epochs of 2 batches
    # of 8, each image's 16 blocks its boxes (some dropped where the crop cuts them).
    out = run_on_shards(tmp_path, "train_detection.py", "jpg,boxes.json", 16, 40, "--size", "64",
                        "--batch-size", "8")
    epochs = re.findall(r"^epoch (\d): 16 images, (\d+) boxes, mean loss ([0-9.]+)$", out, re.M)
    assert [e for e, _, _ in epochs] == ["0", "1"], out
    assert all(16 < int(boxes) <= 16 * 16 and 0 < float(loss) < 100 for _, boxes, loss in epochs), epochs
