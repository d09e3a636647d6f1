"""The experiment runner: paired statistics by hand, resume, rendering, a real --quick run, the committed tables."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from research import EXPERIMENTS, get
from research.runner import (
    ArmResult,
    Experiment,
    doc_section,
    render_markdown,
    run_experiment,
    verdict_of,
)
from rollgym.core.errors import ConfigError
from rollgym.train.stats import estimate, minimum_detectable_effect, paired, t_quantile_80, t_quantile_975

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "experiments.md"
COMMITTED = sorted((REPO / "docs" / "experiments").glob("*.json"))


def test_t_quantiles_and_intervals_by_hand():
    assert t_quantile_975(1) == 12.706 and t_quantile_975(7) == 2.365
    assert t_quantile_975(200) == pytest.approx(1.972, abs=1e-3) and t_quantile_975(0) == math.inf
    e = estimate([0.1, 0.3, 0.2, 0.4, 0.5])
    sd = math.sqrt(sum((x - 0.3) ** 2 for x in [0.1, 0.3, 0.2, 0.4, 0.5]) / 4)
    assert e.mean == pytest.approx(0.3) and e.half_width == pytest.approx(2.776 * sd / math.sqrt(5))
    d = paired([1.0, 2.0, 3.0], [0.5, 1.0, 2.5])
    assert d.mean == pytest.approx(2 / 3) and d.verdict() == "no detectable difference"  # wide with 3 seeds
    assert paired([1.0, 2.0, 3.0, 4.0], [0.0, 1.1, 1.9, 3.0]).verdict() == "higher"
    assert paired([0.0, 0.0], [1.0, 1.1]).verdict() == "lower"
    assert estimate([1.0]).verdict() == "too few seeds" and estimate([1.0]).to_dict()["half_width"] is None
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 2.0])


def test_minimum_detectable_effect_by_hand():
    """MDE = (t_{0.975,n-1} + t_{0.8,n-1}) * sd / sqrt(n): the 80%-power difference of a paired t test at 0.05."""
    assert t_quantile_80(4) == 0.941 and t_quantile_80(1) == 1.376 and t_quantile_80(0) == math.inf
    assert t_quantile_80(120) == pytest.approx(0.8446, abs=1e-3)  # the series past the table
    d = [0.1, 0.3, 0.2, 0.4, 0.5]
    sd = math.sqrt(sum((x - 0.3) ** 2 for x in d) / 4)
    assert minimum_detectable_effect(d) == pytest.approx((2.776 + 0.941) * sd / math.sqrt(5))
    # the MDE is wider than the interval's half-width by the power term, whatever the spread
    assert minimum_detectable_effect(d) / estimate(d).half_width == pytest.approx((2.776 + 0.941) / 2.776)
    assert minimum_detectable_effect([0.2]) == math.inf and minimum_detectable_effect([0.2, 0.2]) == 0.0


def toy(calls):
    def run(ctx, arm, seed, config):
        calls.append((arm, seed))
        noise = ((seed * 7919) % 11) / 100  # shared by both arms of a seed: pairing removes it
        value = noise + (config["gap"] if arm == "better" else 0.0) + (0.001 * seed if arm == "better" else 0.0)
        return ArmResult(value, {"steps": 3.0}, [(0.0, 0.0), (3.0, value)], {"side": value * 2})

    return Experiment(name="toy", title="Toy", question="Does better beat base?", metric="score",
                      arms=("base", "better"), baseline="base", prepare=lambda config, workdir: None, run=run,
                      configs={"full": {"gap": 0.05}, "quick": {"gap": 0.05}}, secondary=("side",), seeds=6)


def test_the_runner_pairs_seeds_resumes_and_renders(tmp_path):
    calls: list[tuple[str, int]] = []
    exp = toy(calls)
    data = run_experiment(exp, tmp_path, progress=False)
    assert len(calls) == 12 and data["n_seeds"] == 6 and data["mode"] == "full"
    assert data["arms"]["better"]["per_seed"][0] == pytest.approx(0.05)
    diff = verdict_of(data, "better", "base")
    assert diff.mean == pytest.approx(0.05 + 0.0025) and diff.verdict() == "higher"
    assert verdict_of(data, "better", "base", "side").mean == pytest.approx(2 * diff.mean)
    assert json.loads((tmp_path / "toy.json").read_text()) == data
    again = run_experiment(exp, tmp_path, progress=False, seeds=7)  # resume: only seed 6 is new
    assert calls[12:] == [("base", 6), ("better", 6)] and again["n_seeds"] == 7
    table = render_markdown(again)
    assert "| better − base | score | +0.0" in table and "higher" in table and "seeds 0-6" in table
    assert "python -m research toy --seeds 7" in table
    first = again["comparisons"][0]
    assert first["mde"] == pytest.approx(minimum_detectable_effect(
        [b - a for a, b in zip(again["arms"]["base"]["per_seed"], again["arms"]["better"]["per_seed"])]))
    assert "MDE (80% power)" in table and f"| {first['mde']:.3f} | 7 (0-6) |" in table


def test_arms_runs_only_the_named_arms_and_keeps_the_others_runs(tmp_path):
    calls: list[tuple[str, int]] = []
    exp = toy(calls)
    run_experiment(exp, tmp_path, progress=False, seeds=2, arms=["base"])
    assert calls == [("base", 0), ("base", 1)]
    data = run_experiment(exp, tmp_path, progress=False, seeds=2, arms=["better"])  # another process's arm
    assert calls[2:] == [("better", 0), ("better", 1)]
    assert data["arms"]["base"]["seeds"] == data["arms"]["better"]["seeds"] == [0, 1]
    with pytest.raises(ConfigError, match="toy has no arm 'best'; its arms are base, better"):
        run_experiment(exp, tmp_path, progress=False, arms=["best"])


def test_a_quick_run_from_the_command_line_writes_json_markdown_and_a_plot(tmp_path):
    """Every experiment's ``--quick`` form end to end, in one process (``all``): the imports are paid once."""
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    done = subprocess.run([sys.executable, "-m", "research", "all", "--quick", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=1800, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in EXPERIMENTS:
        data = json.loads((tmp_path / f"{name}.json").read_text())
        exp = get(name)
        assert data["mode"] == "quick" and data["n_seeds"] == exp.quick_seeds and list(data["arms"]) == list(exp.arms)
        assert all(len(a["per_seed"]) == exp.quick_seeds for a in data["arms"].values())
        assert len(data["comparisons"]) >= len(exp.pairs())
        assert (tmp_path / f"{name}.md").read_text().strip() == render_markdown(data)
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if name == "dynamic":
            for arm in data["arms"].values():
                assert arm["cost"]["policy_rollouts"] == 12  # the same rollout budget in every arm
        committed = REPO / "docs" / "experiments" / f"{name}.json"
        if committed.exists():  # the quick run has the committed file's format
            assert set(json.loads(committed.read_text())) == set(data)


def test_the_command_refuses_doc_with_quick_and_unknown_names(tmp_path):
    done = subprocess.run([sys.executable, "-m", "research", "erils", "--quick", "--doc"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 2 and "--doc" in done.stderr
    done = subprocess.run([sys.executable, "-m", "research", "nope"], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 2 and "Unknown experiment 'nope'" in done.stderr


def test_rollgym_experiment_says_in_one_sentence_where_the_experiments_went():
    """The experiments left the installed library: the old sub-command names ``python -m research`` and a checkout."""
    for argv in (["experiment", "nope"], ["experiment", "--list"], ["experiment", "erils", "--quick", "--out", "x"]):
        done = subprocess.run([sys.executable, "-m", "rollgym.cli", *argv], capture_output=True, text=True,
                              timeout=300, cwd=REPO)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "python -m research NAME" in done.stderr and "checkout" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_committed_tables_are_what_the_runner_renders_from_the_committed_results(path):
    data = json.loads(path.read_text())
    exp = get(data["experiment"])
    assert data["mode"] == "full" and data["config"] == exp.configs["full"]  # a full run of today's settings
    # five paired seeds at least; the real-model experiments (up to an hour of CPU per trained seed) state three
    assert data["n_seeds"] >= exp.seeds >= (3 if exp.name.startswith("realmodel") else 5)
    assert data["arms_order"] == list(exp.arms)
    for arm in exp.arms:
        assert data["arms"][arm]["seeds"] == list(range(data["n_seeds"]))
    for c in data["comparisons"]:
        assert c["half_width"] is not None and c["verdict"] in ("higher", "lower", "no detectable difference")
        # the power statement recomputes from the stored per-seed values of both arms
        primary = c["metric"] == data["metric"]
        values = {(r["arm"], r["seed"]): float(r["metric"] if primary else r["extras"][c["metric"]])
                  for r in data["runs"] if r["arm"] in (c["a"], c["b"])}
        differences = [values[c["a"], s] - values[c["b"], s] for s in c["seeds"]]
        assert c["mde"] == pytest.approx(minimum_detectable_effect(differences), rel=1e-9, abs=1e-12)
        assert c["mean"] == pytest.approx(sum(differences) / len(differences), rel=1e-9, abs=1e-12)
    assert doc_section(DOC, data["experiment"]) == render_markdown(data)
    assert (REPO / "docs" / "img" / f"experiment_{data['experiment']}.png").exists()


def test_every_experiment_has_a_documented_table_or_is_pending():
    text = DOC.read_text()
    for name in EXPERIMENTS:
        assert f"<!-- experiment:{name}:begin -->" in text, name


WARM_MODULE = '''
import torch

from research.runner import ArmResult, Experiment


def prepare(config, workdir):
    """A warm-up with real matrix products: a small MLP trained a few steps from seed 0."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 8))
    x, y = torch.randn(512, 64), torch.randn(512, 8)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)  # Adam and softmax: vectorized kernels that differ by CPU level
    for _ in range(config["steps"]):
        opt.zero_grad()
        torch.nn.functional.mse_loss(torch.softmax(net(x), -1), y).backward()
        opt.step()
    return {"net": net}


def run(ctx, arm, seed, config):
    return ArmResult(float(seed) + (0.1 if arm == "b" else 0.0))


EXPERIMENT = Experiment(name="warm", title="Warm", question="?", metric="m", arms=("a", "b"), baseline="a",
                        prepare=prepare, run=run, configs={"full": {"steps": 20}, "quick": {"steps": 20}}, seeds=2)
'''


def _warm_experiment(tmp_path):
    import importlib.util

    (tmp_path / "warm_exp.py").write_text(WARM_MODULE)
    spec = importlib.util.spec_from_file_location("warm_exp", tmp_path / "warm_exp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXPERIMENT


def test_the_recorded_warm_up_hash_is_recomputed_in_a_fresh_process_with_other_thread_and_kernel_settings(tmp_path):
    """A run records its warm-up's hash; a fresh process started with other OMP/MKL threads and another CPU kernel
    level (as on a machine with AVX-512), pinned the way the experiment command pins them, builds the same weights
    bit for bit. Without the pinning the kernel level alone changes the weights (checked first)."""
    import os
    import platform

    pytest.importorskip("torch")
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the pinned kernel level is x86's AVX2")
    _warm_experiment(tmp_path)  # writes warm_exp.py
    head = "import sys; sys.path.insert(0, sys.argv[1])\nfrom research import runner\n"
    record = head + ("runner.pin_kernels(); runner.pin_threads(1)\nimport warm_exp\n"
                     "runner.run_experiment(warm_exp.EXPERIMENT, sys.argv[2], progress=False)\n")
    recompute = head + ("pin = sys.argv[2] == 'pin'\nif pin: runner.pin_kernels(); runner.pin_threads(1)\n"
                        "import json, warm_exp\nexp = warm_exp.EXPERIMENT\n"
                        "print(json.dumps(runner.starting_point(exp, exp.prepare(exp.configs['full'], None))))\n")

    def python(script, *args, **env):
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path), *args], capture_output=True, text=True,
                              timeout=300, cwd=REPO, env={**os.environ, **env})
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    python(record, str(tmp_path / "out"))
    data = json.loads((tmp_path / "out" / "warm.json").read_text())
    start = data["starting_point"]
    assert start["torch_threads"] == 1 and start["cpu_capability"] == "AVX2" and "numpy" in start
    assert len(start["warm_state_sha256"]) == 64
    assert f"Starting point: warm-up weights sha256 `{start['warm_state_sha256'][:16]}`" in render_markdown(data)
    other = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "ATEN_CPU_CAPABILITY": "avx512"}
    unpinned = json.loads(python(recompute, "native", **other))
    if unpinned["cpu_capability"] == "AVX512":  # a CPU with AVX-512: its own kernels give other weights
        assert unpinned["warm_state_sha256"] != start["warm_state_sha256"]
    again = json.loads(python(recompute, "pin", **other))
    assert again["cpu_capability"] == "AVX2" and again["warm_state_sha256"] == start["warm_state_sha256"]


def test_a_resume_from_another_warm_up_is_refused_and_a_differing_reference_warns(tmp_path, capsys):
    pytest.importorskip("torch")
    from rollgym.core.errors import ConfigError

    exp = _warm_experiment(tmp_path)
    out = tmp_path / "out"
    data = run_experiment(exp, out, progress=False, seeds=1)
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps({**data, "starting_point": {**data["starting_point"], "torch": "0.0"}}))
    run_experiment(exp, tmp_path / "other", progress=False, seeds=1, reference=reference)
    assert "warning: the warm-up matches the reference results" in capsys.readouterr().out
    moved = {**data, "starting_point": {**data["starting_point"], "warm_state_sha256": "0" * 64}}
    (out / "warm.json").write_text(json.dumps(moved))
    with pytest.raises(ConfigError, match=r"Cannot resume: this machine's warm-up differs .* 000000000000 ->"):
        run_experiment(exp, out, progress=False, seeds=2)
    (out / "warm.json").write_text(json.dumps(data))  # the same warm-up: the resume adds seed 1
    assert run_experiment(exp, out, progress=False, seeds=2)["n_seeds"] == 2


def test_the_t3rl_control_rewards_verified_tool_use_with_no_vote():
    """tool-reward: 1 for a rollout the env verified, 0 otherwise, whatever the answers agree on; no pseudo-label."""
    from research.t3rl import ARMS, EXPERIMENT, ToolRewardScorer
    from rollgym.core import Task
    from rollgym.rollout.types import RolloutGroup, Trajectory

    def traj(i, parsed, verified, status="completed"):
        info = {"parsed": parsed, **({} if verified is None else {"verified": verified})}
        return Trajectory(f"t{i}", "g", i, "E-v0", "task-1", 0, reward=0.5, status=status, info=info,
                          completion_ids=[1, 2], loss_mask=[1, 1], logprobs=[-0.1, -0.1])

    # the popular answer 7 is unverified; the lone verified rollout gets the reward, a failed one is untouched
    group = RolloutGroup("g", Task("task-1", "E-v0", "q", "9"), 5,
                         [traj(0, "7", False), traj(1, "7", None), traj(2, "7", False), traj(3, "9", True),
                          traj(4, "9", True, status="failed")])
    ToolRewardScorer()(group)
    assert [t.reward for t in group.trajectories] == [0.0, 0.0, 0.0, 1.0, 0.5]
    assert group.pseudo_label is None and group.trajectories[3].metrics["verified_by"] == "env"
    assert "tool-reward" in ARMS and ("t3rl", "tool-reward") in EXPERIMENT.pairs()


def test_the_committed_april_warm_up_is_rebuilt_bit_for_bit_here(tmp_path):
    """The cross-machine check of the committed results: a fresh process, pinned as the experiment command pins it,
    rebuilds the APRIL (and branching) experiment's warm-up and gets the sha256 the committed JSON records. CI runs
    this on another machine than the one that made the JSON; an audit found a rerun elsewhere gave another
    warm-up before kernels and threads were pinned."""
    pytest.importorskip("torch")
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the pinned kernel level is x86's AVX2")
    recorded = json.loads((REPO / "docs" / "experiments" / "april.json").read_text())["starting_point"]
    script = ("import json, sys, pathlib\nfrom research import runner\n"
              "runner.pin_kernels(); runner.pin_threads(1)\nexp = runner.get('april')\n"
              "context = exp.prepare(exp.configs['full'], pathlib.Path(sys.argv[1]))\n"
              "print(json.dumps(runner.starting_point(exp, context)))\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    rebuilt = json.loads(done.stdout.strip().splitlines()[-1])
    assert rebuilt["mkl_cbwr"] == "AVX2,STRICT" and rebuilt["cpu_capability"] == "AVX2"
    where = f"recorded on {recorded.get('cpu', 'an unrecorded CPU')}, rebuilt on {rebuilt['cpu']}"
    assert rebuilt["warm_state_sha256"] == recorded["warm_state_sha256"], where
    assert rebuilt["tokenizer_sha256"] == recorded["tokenizer_sha256"], where


def _runs(values, starts):
    """Hand-made runs: ``values[arm]`` per seed, ``starts[arm]`` the warm-up hash each run records (None: none)."""
    return [{"arm": arm, "seed": s, "metric": v, "cost": {}, "curve": [], "extras": {}, "seconds": 0.0,
             **({} if starts[arm] is None else {"starting_point": {"warm_state_sha256": starts[arm],
                                                                   "tokenizer_sha256": None}})}
            for arm in values for s, v in enumerate(values[arm])]


def test_arms_from_different_warm_ups_are_not_compared():
    """Paired controls: two arms whose runs record different warm-up hashes get no difference, one sentence
    instead; a run with no recorded starting point counts as different, never as paired."""
    from research.runner import summarize

    exp = toy([])
    values = {"base": [0.1, 0.2, 0.3], "better": [0.2, 0.4, 0.5]}
    for starts, why in ((({"base": "a" * 64, "better": "b" * 64}),
                         "better and base are not compared: their runs started from different warm-ups "
                         "(better from bbbbbbbbbbbb, base from aaaaaaaaaaaa)."),
                        ({"base": "a" * 64, "better": None},
                         "better and base are not compared: runs of better record no starting point")):
        data = summarize(exp, {"gap": 0.05}, "full", _runs(values, starts), 3, "cmd", 0.0)
        assert len(data["comparisons"]) == 1  # the secondary measure is not compared either
        c = data["comparisons"][0]
        assert c["mean"] is None and c["mde"] is None and c["verdict"] == "not shown paired"
        assert c["refused"].startswith(why) and c["refused"].count(". ") == 0  # one sentence
        table = render_markdown(data)
        assert "| better − base | score | not computed | - | 3 (0-2) | not shown paired |" in table
        assert f"Not shown paired: {c['refused']}" in table
        with pytest.raises(KeyError, match="not compared"):
            verdict_of(data, "better", "base")
    paired_data = summarize(exp, {"gap": 0.05}, "full", _runs(values, {"base": "a" * 64, "better": "a" * 64}), 3,
                            "cmd", 0.0)
    assert paired_data["comparisons"][0]["verdict"] == "higher" and "Not shown paired" not in render_markdown(
        paired_data)


def test_every_run_records_its_starting_point_and_a_file_without_one_is_not_paired(tmp_path, capsys):
    calls: list[tuple[str, int]] = []
    exp = toy(calls)
    data = run_experiment(exp, tmp_path, progress=False, seeds=2, arms=["base"])
    assert all(r["starting_point"] == {"warm_state_sha256": None, "tokenizer_sha256": None} for r in data["runs"])
    # a file from before the record: no starting point, neither per run nor per file
    legacy = {**data, "starting_point": None,
              "runs": [{k: v for k, v in r.items() if k != "starting_point"} for r in data["runs"]]}
    (tmp_path / "toy.json").write_text(json.dumps(legacy))
    resumed = run_experiment(exp, tmp_path, progress=False, seeds=2, arms=["better"])
    assert [c["verdict"] for c in resumed["comparisons"]] == ["not shown paired"]
    assert "warning: better and base are not compared: runs of base record no starting point" in capsys.readouterr().out
    assert "| better − base | score | not computed |" in render_markdown(resumed)


def test_a_committed_file_without_starting_points_renders_as_not_shown_paired():
    """The committed files that predate the record keep their numbers but lose their readings."""
    erils = json.loads((REPO / "docs" / "experiments" / "erils.json").read_text())
    assert erils["starting_point"] is None and not any("starting_point" in r for r in erils["runs"])
    table = render_markdown(erils)
    assert "| external-length − on-policy | held-out greedy accuracy | +0.009 ± 0.027 | 0.038 | 8 (0-7) | " \
           "not shown paired |" in table
    assert "Not shown paired: this results file records no starting point" in table
    assert not any(row.endswith("| higher |") or row.endswith("| lower |") for row in table.splitlines())
    april = json.loads((REPO / "docs" / "experiments" / "april.json").read_text())  # records one for the file
    assert "not shown paired" not in render_markdown(april)


def test_no_mde_is_printed_when_the_differences_have_no_spread():
    from research.runner import summarize

    values = {"base": [0.1, 0.2, 0.3], "better": [0.6, 0.7, 0.8]}  # +0.5 on every seed
    data = summarize(toy([]), {"gap": 0.05}, "full", _runs(values, {"base": "a" * 64, "better": "a" * 64}), 3,
                     "cmd", 0.0)
    table = render_markdown(data)
    assert "| better − base | score | +0.500 ± 0.000 | n/a (no spread) | 3 (0-2) | higher |" in table
    trl = render_markdown(json.loads((REPO / "docs" / "experiments" / "realmodel-trl.json").read_text()))
    assert "| trl − base | answer_block | +1.000 ± 0.000 | n/a (no spread) |" in trl


def test_the_power_sentence_says_what_an_mde_does_and_does_not_say():
    table = render_markdown(json.loads((REPO / "docs" / "experiments" / "branching.json").read_text()))
    power = next(line for line in table.splitlines() if line.startswith("Power:"))
    assert "detects with 80% probability" in power  # what it says: the design's power
    assert "does not rule out an effect of about the MDE" in power and "interval is what bounds the effect" in power
    assert "no spread" in power
    text = DOC.read_text()
    assert "rules out effects of about the MDE" not in text and "could hide" not in text


def test_the_summary_table_is_generated_from_every_committed_comparison():
    from research.summary import committed_results, render_summary, summary_section

    results = committed_results(REPO / "docs" / "experiments")
    assert {d["experiment"] for d in results} == {p.stem for p in COMMITTED}
    summary = summary_section(DOC)
    assert summary == render_summary(results)
    rows = [line for line in summary.splitlines() if line.startswith("| ") and " − " in line]
    assert len(rows) == sum(len(d["comparisons"]) for d in results)  # every comparison and control
    assert "| t3rl − tool-reward | primary: greedy accuracy (true answers) | -0.058 ± 0.099 | 0.133 |" in summary
    assert "| external-length − external-joint-length |" in summary


def test_the_documented_unpaired_controls_show_in_the_committed_curves():
    """The docs' claim that ERILS's joint+length arm and T^3RL's control started elsewhere: the step-0 point of
    every seed's curve (held-out accuracy before any training) differs from the other arms'."""
    def start_metric(name, arm):
        data = json.loads((REPO / "docs" / "experiments" / f"{name}.json").read_text())
        return {round(r["curve"][0][1], 3) for r in data["runs"] if r["arm"] == arm}

    assert start_metric("erils", "external-joint-length") == {0.143}
    assert all(start_metric("erils", arm) == {0.117} for arm in ("on-policy", "external-joint", "external-length"))
    assert start_metric("t3rl", "tool-reward") == {0.146}
    assert start_metric("t3rl", "ttrl") == start_metric("t3rl", "t3rl") == {0.0}


def test_every_interval_in_the_prose_comes_from_a_results_file():
    """Each `mean ± half-width` in docs/experiments.md's hand-written prose is an estimate some committed results
    file holds (or a figure of a table rendered from one, which the tests above check against its JSON)."""
    import re

    def estimates(node, out):
        if isinstance(node, dict):
            if node.get("mean") is not None and node.get("half_width") is not None:
                out.append((node["mean"], node["half_width"]))
            for value in node.values():
                estimates(value, out)
        elif isinstance(node, list):
            for value in node:
                estimates(value, out)
        return out

    figure = re.compile(r"([+−-]?)(\d+\.\d+) ±\s+(\d+\.\d+)")

    def value(sign, number):
        return -float(number) if sign in ("−", "-") else float(number)

    text = DOC.read_text()
    generated = re.compile(r"<!-- ([\w:-]+):begin -->.*?<!-- \1:end -->", re.S)
    known = []
    for path in (REPO / "docs" / "experiments").rglob("*.json"):
        known += estimates(json.loads(path.read_text()), [])
    tables = [(value(m[1], m[2]), float(m[3])) for section in generated.finditer(text)
              for m in figure.finditer(section.group(0))]
    prose = generated.sub("", text)
    found = list(figure.finditer(prose))
    assert len(found) > 20  # the check reads the prose's figures
    missing = []
    for m in found:
        mean, half = value(m[1], m[2]), float(m[3])
        places, half_places = len(m[2].split(".")[1]), len(m[3].split(".")[1])
        if not any(round(a, places) == round(mean, places) and round(b, half_places) == half
                   for a, b in known + tables):
            missing.append(m[0])
    assert not missing, f"intervals in the prose that no results file holds: {missing}"
