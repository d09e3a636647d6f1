"""The per-token distillation diagnostic on real rollouts of the tiny model: values against a direct
recomputation, the empty-context self-teacher, refused tokenizers, bad files, help/hurt and the CLI."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rollgym import cli  # noqa: E402
from rollgym.core.errors import ConfigError  # noqa: E402
from rollgym.train.distill_diagnostic import (  # noqa: E402
    TrajectorySignal,
    aggregate,
    diagnose,
    load_groups,
    require_shared_tokenizer,
)
from rollgym.train.teacher import Teacher, answer_context, context_ids  # noqa: E402


@pytest.fixture(scope="module")
def results_file(tiny_backend, tmp_path_factory) -> Path:
    """A real results file: the tiny model's ChatAgent on two Countdown tasks, two rollouts each."""
    from rollgym.agents.backends.base import SamplingParams
    from rollgym.agents.chat import ChatAgent
    from rollgym.rollout import collect

    out = tmp_path_factory.mktemp("diag") / "countdown.jsonl"
    agent = ChatAgent(tiny_backend, SamplingParams(max_tokens=8, temperature=1.0))
    collect(agent, "Countdown-v0", n_tasks=2, group_size=2, seed=0, out=str(out))
    return out


@pytest.fixture(scope="module")
def student(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


@pytest.fixture(scope="module")
def other_dir(tiny_model_dir, tiny_backend, tmp_path_factory) -> Path:
    """Another model with the student's tokenizer (fresh weights, sharpened), saved as a folder."""
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    torch.manual_seed(5)
    other = AutoModelForCausalLM.from_config(base.config)
    with torch.no_grad():
        other.lm_head.weight.mul_(10.0)
    folder = tmp_path_factory.mktemp("other-teacher")
    other.save_pretrained(folder)
    tiny_backend.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def foreign_dir(tmp_path_factory) -> Path:
    """A tiny model with a different tokenizer (a smaller vocabulary trained on other text)."""
    from rollgym.agents.backends.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("foreign"), seed=3, vocab_size=300)


def _direct(model, ids: list[int], start: int, n: int):
    """Log-softmax at the positions that predict ids[start : start + n], from one plain forward pass."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    return torch.log_softmax(logits, -1)[start - 1 : start - 1 + n]


def test_per_token_values_equal_a_direct_recomputation(results_file, student, tiny_backend, other_dir):
    from transformers import AutoModelForCausalLM

    tok = tiny_backend.tokenizer
    other = AutoModelForCausalLM.from_pretrained(other_dir).eval()
    groups = load_groups(results_file)
    teachers = {"other": Teacher(other), "self:answer": Teacher(student, tok, context=answer_context)}
    report = diagnose(student, tok, groups, teachers)
    by_id = {t.traj_id: (g, t) for g in groups for t in g.trajectories}
    checked = 0
    for name, teacher in teachers.items():
        assert len(report.signals[name]) == 4
        for signal in report.signals[name]:
            group, traj = by_id[signal.traj_id]
            prefix = context_ids(tok, answer_context(traj, group)) if name == "self:answer" else []
            n = len(traj.completion_ids)
            s = _direct(student, traj.prompt_ids + traj.completion_ids, len(traj.prompt_ids), n)
            t = _direct(teacher.model, prefix + traj.prompt_ids + traj.completion_ids,
                        len(prefix) + len(traj.prompt_ids), n)
            keep = [j for j in range(n) if traj.loss_mask[j]]
            ids = torch.tensor(traj.completion_ids)
            s_lp, t_lp = s.gather(-1, ids[:, None])[:, 0], t.gather(-1, ids[:, None])[:, 0]
            rev = (s.exp() * (s - t)).sum(-1)
            fwd = (t.exp() * (t - s)).sum(-1)
            assert signal.tokens == [traj.completion_ids[j] for j in keep]
            assert signal.student == pytest.approx([float(s_lp[j]) for j in keep], abs=1e-5)
            assert signal.teacher == pytest.approx([float(t_lp[j]) for j in keep], abs=1e-5)
            assert signal.delta == pytest.approx([float(t_lp[j] - s_lp[j]) for j in keep], abs=1e-5)
            assert signal.reverse_kl == pytest.approx([float(rev[j]) for j in keep], abs=1e-5)
            assert signal.forward_kl == pytest.approx([float(fwd[j]) for j in keep], abs=1e-5)
            assert signal.correct == traj.correct and signal.task_id == traj.task_id
            checked += len(keep)
    assert checked > 20
    assert any(abs(v) > 0.1 for s in report.signals["other"] for v in s.delta)  # a real difference was measured
    assert any(abs(v) > 1e-3 for s in report.signals["self:answer"] for v in s.delta)  # the answer changes the teacher


def test_a_self_teacher_with_empty_context_equals_the_student(results_file, student, tiny_backend):
    tok = tiny_backend.tokenizer
    groups = load_groups(results_file)
    report = diagnose(student, tok, groups, {"self": Teacher(student, tok, context=None),
                                             "empty": Teacher(student, tok, context=lambda traj, group: "")})
    signals = report.signals["self"]
    assert signals and all(s.has_teacher for s in signals)
    assert all(s.teacher == s.student and set(s.delta) == {0.0} for s in signals)
    assert all(abs(v) < 1e-6 for s in signals for v in s.reverse_kl + s.forward_kl)
    agg = report.per_teacher()["self"]
    assert agg.tokens > 0 and agg.aligned == 0.0 and agg.helps == agg.hurts == 0.0 and agg.verdict == "neutral"
    # a context function that gives nothing means no teacher for that rollout (as in training), not a crash
    assert not any(s.has_teacher for s in report.signals["empty"]) and report.per_teacher()["empty"].tokens == 0


def test_help_and_hurt_follow_the_outcome_per_question():
    up, down = [0.4, 0.2, -0.1], [-0.3, 0.5]
    right = TrajectorySignal("r", "q1", True, 1.0, delta=up, reverse_kl=[0.1] * 3, forward_kl=[0.2] * 3)
    wrong = TrajectorySignal("w", "q1", False, 0.0, delta=down, reverse_kl=[0.3] * 2, forward_kl=[0.4] * 2)
    other = TrajectorySignal("o", "q2", False, 0.0, delta=[0.7], reverse_kl=[1.0], forward_kl=[1.0])
    agg = aggregate([right, wrong])
    # correct rollout: d = +1, aligned = delta; wrong one: d = -1, aligned = -delta
    assert agg.aligned == pytest.approx((0.4 + 0.2 - 0.1 + 0.3 - 0.5) / 5)
    assert (agg.helps, agg.hurts) == (pytest.approx(3 / 5), pytest.approx(2 / 5))
    assert agg.helps_correct == pytest.approx(2 / 3) and agg.helps_wrong == pytest.approx(1 / 2)
    assert agg.delta_correct == pytest.approx(0.5 / 3) and agg.delta_wrong == pytest.approx(0.1)
    assert agg.reverse_kl == pytest.approx(0.9 / 5) and agg.verdict == "helps"
    assert aggregate([other]).verdict == "hurts"  # pushing a wrong rollout's token up
    from rollgym.train.distill_diagnostic import DiagnosticReport

    report = DiagnosticReport({"A": [right, wrong, other],
                               "B": [TrajectorySignal(s.traj_id, s.task_id, s.correct, s.reward,
                                                      delta=[-v for v in s.delta], reverse_kl=s.reverse_kl,
                                                      forward_kl=s.forward_kl) for s in (right, wrong, other)]})
    assert report.best_teacher() == {"q1": "A", "q2": "B"}
    table = report.to_markdown()
    assert "| q1 | A | 2 (1) | +0.060 | 0.60 | 0.40 | helps |" in table
    assert "| q2 | B | 1 (0) | +0.700 | 1.00 | 0.00 | helps |" in table


def test_a_teacher_with_another_tokenizer_is_refused_in_one_sentence(tiny_backend, foreign_dir, results_file,
                                                                      tiny_model_dir, capsys):
    from transformers import AutoTokenizer

    foreign = AutoTokenizer.from_pretrained(foreign_dir)
    with pytest.raises(ConfigError) as caught:
        require_shared_tokenizer(tiny_backend.tokenizer, foreign, "foreign")
    message = str(caught.value)
    assert "different tokenizer" in message and "\n" not in message and message.endswith(".")
    require_shared_tokenizer(tiny_backend.tokenizer, AutoTokenizer.from_pretrained(tiny_model_dir))  # same: fine
    status = cli.main(["distill-diagnostic", str(results_file), "--student", str(tiny_model_dir),
                       "--teacher", str(foreign_dir)])
    err = capsys.readouterr().err
    assert status == 2 and "different tokenizer" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def _oracle_results(path: Path) -> Path:
    from rollgym.agents import make_agent
    from rollgym.rollout import collect

    collect(make_agent("oracle"), "Countdown-v0", n_tasks=1, group_size=1, seed=0, out=str(path))
    return path


@pytest.mark.parametrize("kind", ["missing", "empty", "not_json", "other_json", "broken_episode", "no_tokens",
                                  "foreign_ids", "bad_gzip", "gzip_of_junk"])
def test_bad_trajectory_files_give_one_sentence(kind, tmp_path, results_file, tiny_model_dir, capsys):
    path = tmp_path / ("bad.jsonl.gz" if "gzip" in kind else "bad.jsonl")
    if kind == "bad_gzip":
        path.write_text("plain text, not gzip\n")
    elif kind == "gzip_of_junk":
        import gzip

        path.write_bytes(gzip.compress(b"this is not json\n"))
    elif kind == "empty":
        path.write_text("")
    elif kind == "not_json":
        path.write_text("this is not json\n")
    elif kind == "other_json":
        path.write_text('{"hello": 1}\n')
    elif kind == "broken_episode":
        header = results_file.read_text().splitlines()[0]
        path.write_text(header + '\n{"kind": "episode", "task_index": 0, "trajectory": {"traj_id": "x"}}\n'
                        + '{"kind": "episode", "task_index": 0, "trajectory": {"traj_id": "y"}}\n')
    elif kind == "no_tokens":
        _oracle_results(path)
    elif kind == "foreign_ids":
        lines = results_file.read_text().splitlines()
        episode = json.loads(lines[1])
        episode["trajectory"]["completion_ids"][0] = 10**6
        path.write_text("\n".join([lines[0], json.dumps(episode)]) + "\n")
    status = cli.main(["distill-diagnostic", str(path), "--student", str(tiny_model_dir), "--teacher", "self:answer"])
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert err.startswith("rollgym: error:") and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.endswith(".")  # one sentence, no traceback
    if kind != "foreign_ids":
        with pytest.raises(ConfigError):
            load_groups(path)
    if kind == "gzip_of_junk":
        assert str(path) in err and "not JSONL" in err  # the user's file is named, not the temporary copy


def test_a_gzipped_results_file_reads_as_the_plain_one(results_file, tmp_path):
    import gzip

    packed = tmp_path / "countdown.jsonl.gz"
    packed.write_bytes(gzip.compress(results_file.read_bytes()))
    assert [g.to_dict() for g in load_groups(packed)] == [g.to_dict() for g in load_groups(results_file)]


def test_the_command_writes_json_markdown_and_a_plot(results_file, tiny_model_dir, other_dir, tmp_path, capsys):
    out, md, png, svg = (tmp_path / n for n in ("r.json", "r.md", "r.png", "r.svg"))
    args = ["distill-diagnostic", str(results_file), "--student", str(tiny_model_dir), "--teacher", "self",
            "--teacher", "self:answer", "--teacher", "self:sibling", "--teacher", str(other_dir)]
    assert cli.main([*args, "--out", str(out), "--markdown", str(md), "--plot", str(png), "--tokens"]) == 0
    printed = capsys.readouterr().out
    assert "Distillation diagnostic" in printed and "self:answer" in printed
    data = json.loads(out.read_text())
    assert set(data["teachers"]) == {"self", "self:answer", "self:sibling", str(other_dir)}
    assert data["teachers"]["self"]["verdict"] == "neutral" and data["teachers"]["self"]["tokens"] > 0
    assert data["teachers"]["self:sibling"]["tokens"] == 0  # no rollout of the tiny model is correct: no sibling
    assert len(data["questions"]) == 2 and len(data["rollouts"]["self:answer"]) == 4
    assert all(math.isfinite(v) for s in data["rollouts"][str(other_dir)] for v in s["delta"])
    assert md.read_text().startswith("| teacher |") and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main([*args[:4], "--teacher", "self:answer", "--plot", str(svg), "--limit", "3"]) == 0
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and len(root.findall(".//{http://www.w3.org/2000/svg}rect")) > 3


def test_smollm2_and_qwen_tokenizers_are_refused_in_one_sentence():
    from transformers import AutoTokenizer

    from rollgym.agents.backends import catalog

    folders = [catalog.model_dir(name) for name in ("smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct")]
    if not all((f / "tokenizer.json").exists() for f in folders):
        pytest.skip("SmolLM2-135M and Qwen2.5-Coder-0.5B are not cached (rollgym models pull NAME)")
    student, teacher = (AutoTokenizer.from_pretrained(f) for f in folders)
    with pytest.raises(ConfigError, match=r"^Teacher 'qwen' uses a different tokenizer from the student "
                                          r"\(151936 against 49152 tokens\)[^\n]*\.$"):
        require_shared_tokenizer(student, teacher, "qwen")


REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "diagnostics" / "distill_countdown_smollm2.json"


def test_the_docs_tables_are_the_committed_report():
    """docs/training.md's diagnostic tables are rendered from the committed report; a hand edit fails here."""
    from rollgym.train.distill_diagnostic import render_markdown

    data = json.loads(COMMITTED.read_text(encoding="utf-8"))
    docs = (REPO / "docs" / "training.md").read_text(encoding="utf-8")
    teacher_table = render_markdown(data).split("\n\n")[0]
    assert teacher_table in docs
    assert data["meta"]["student"] == "smollm2-135m-instruct" and data["meta"]["rollouts"] >= 24
    assert (REPO / "docs" / "img" / "distill_diagnostic.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_plot_is_an_svg(monkeypatch, tmp_path):
    import sys

    from rollgym.train.distill_diagnostic import DiagnosticReport

    report = DiagnosticReport({"A": [TrajectorySignal("r", "q1", True, 1.0, delta=[0.4, -0.1], reverse_kl=[0.1] * 2,
                                                      forward_kl=[0.1] * 2)]})
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    written = report.plot(tmp_path / "figure.png")
    assert written == tmp_path / "figure.svg" and not (tmp_path / "figure.png").exists()
    root = ET.parse(written).getroot()
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.find("{http://www.w3.org/2000/svg}title")
            is not None]
    assert [b.find("{http://www.w3.org/2000/svg}title").text for b in bars] == ["A: 0.15", "correct rollouts: 0.5"]
