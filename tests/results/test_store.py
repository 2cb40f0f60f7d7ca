"""The result directory on disk: atomic cells, defensive reading, scanning broken runs."""

import json
import os
import time
from pathlib import Path

import pytest

from dspark_tui.engine.rundir.liveness import runner_alive
from dspark_tui.model import CellKey, CellResult, ClientMetrics, UserError
from dspark_tui.model.cell import CellStatus
from dspark_tui.model.events import CellFinished, Notice, RunStarted
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan, scan_runs
from dspark_tui.results.atomic import atomic_write_text
from dspark_tui.results.follow import EventFollower


def _result(arm="st=3", scenario="chat_short", c=8, tok=1000.0, status=CellStatus.OK):
    return CellResult(arm=arm, scenario=scenario, concurrency=c, status=status,
                      metrics=ClientMetrics(total_throughput=tok, completed=32))


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    plan, source = resolve_plan("demo")
    return RunStore.create(tmp_path, manifest_for_plan(plan, source))


def test_create_names_the_directory_and_writes_manifest(store: RunStore, tmp_path: Path):
    assert store.path.parent == tmp_path
    assert store.path.name.startswith("demo_")
    manifest = store.read_manifest()
    assert manifest.arm_names() == ["st=3", "st=5"]
    assert manifest.compared[0].flag == "--spec-tokens"
    assert manifest.total_cells == 10


def test_two_runs_in_the_same_second_get_distinct_dirs(tmp_path: Path):
    plan, _ = resolve_plan("demo")
    a = RunStore.create(tmp_path, manifest_for_plan(plan))
    b = RunStore.create(tmp_path, manifest_for_plan(plan), when=None)
    assert a.path != b.path


def test_cell_roundtrip_uses_safe_paths(store: RunStore):
    path = store.save_cell(_result())
    assert path == store.path / "cells" / "st_3" / "chat_short__c8__r1p1.json"
    cells, problems = store.load_cells()
    assert problems == []
    assert cells[CellKey(arm="st=3", scenario="chat_short", concurrency=8)].total_throughput == 1000.0
    assert not list(path.parent.glob(".*tmp")), "no temp files left behind"


def test_done_slots_skip_failed_and_broken_measurements(store: RunStore):
    store.save_cell(_result(c=1))
    store.save_cell(_result(c=16, status=CellStatus.FAILED))
    broken = store.cell_path(CellKey(arm="st=5", scenario="chat_short", concurrency=1))
    broken.parent.mkdir(parents=True)
    broken.write_text('{"schema_version": 1, "arm": "st=5", "scen')
    assert store.done_slots() == {(CellKey(arm="st=3", scenario="chat_short", concurrency=1), 1, 1)}


def test_load_run_reports_problems_and_keeps_the_rest(store: RunStore):
    store.save_cell(_result(c=1))
    store.save_cell(_result(c=16))
    truncated = store.cell_path(CellKey(arm="st=5", scenario="chat_short", concurrency=1))
    truncated.parent.mkdir(parents=True)
    truncated.write_text('{"schema_version": 1, "ar')
    old = store.cell_path(CellKey(arm="st=5", scenario="chat_short", concurrency=16))
    old.write_text(json.dumps({"schema_version": 0, "arm": "st=5", "scenario": "chat_short",
                               "concurrency": 16}))
    store.manifest_path.unlink()
    run = load_run(store.path)
    assert len(run.cells) == 2
    reasons = {p.path: p.reason for p in run.problems}
    assert "run.json" in reasons and "missing" in reasons["run.json"]
    assert "truncated" in reasons["cells/st_5/chat_short__c1__r1p1.json"]
    assert "schema version 0" in reasons["cells/st_5/chat_short__c16__r1p1.json"]
    assert run.manifest.arm_names() == ["st=3"]


def test_load_run_of_missing_dir_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserError, match="no such run directory"):
        load_run(tmp_path / "nope")


def test_a_file_in_the_way_of_the_results_root_is_a_user_error(tmp_path: Path):
    plan, source = resolve_plan("demo")
    in_the_way = tmp_path / "hostname"
    in_the_way.write_text("not a folder\n")
    for root in (in_the_way, in_the_way / "below"):  # FileExistsError, NotADirectoryError
        with pytest.raises(UserError) as caught:
            RunStore.create(root, manifest_for_plan(plan, source))
        assert str(caught.value).startswith(f"{root}: cannot create a run directory there (")
    assert in_the_way.read_text() == "not a folder\n"


def test_full_disk_keeps_old_file_and_leaves_no_temp(tmp_path: Path):
    """/dev/full fails every write with ENOSPC; simulate by writing into a tiny tmpfs-less path."""
    target = tmp_path / "cell.json"
    atomic_write_text(target, "old")

    class Exploding(str):
        def encode(self, *args, **kwargs):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        atomic_write_text(target, Exploding("new"))
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["cell.json"]


def test_events_follow_ignores_torn_last_line(store: RunStore):
    follower = EventFollower(store.path)
    store.append_event(RunStarted(run_dir=str(store.path), name="demo", arms=["st=3"], total_cells=1))
    assert [e.kind for e in follower.poll()] == ["run_started"]
    with open(store.events_path, "a") as handle:
        handle.write('{"kind": "notice", "message": "half')
    assert follower.poll() == []
    with open(store.events_path, "a") as handle:
        handle.write(' done"}\n')
    assert [e.kind for e in follower.poll()] == ["notice"]
    store.append_event(CellFinished(result=_result()))
    store.append_event(Notice(message="x"))
    assert [e.kind for e in follower.poll()] == ["cell_finished", "notice"]


def test_results_csv_has_one_row_per_measurement(store: RunStore):
    second = _result(c=1).model_copy(update={"round": 2, "session": "s3"})
    results = [_result(c=1), second, _result(arm="st=5", c=1, tok=1200.0)]
    path = store.write_results_csv(results)
    lines = path.read_text().splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("arm,scenario,concurrency,round,repeat,session,node,status")
    assert lines[2].startswith("st=3,chat_short,1,2,1,s3,,ok")


def test_scan_lists_broken_runs_with_reasons(tmp_path: Path, store: RunStore):
    (tmp_path / "no_manifest").mkdir()
    (tmp_path / "no_manifest" / "cells").mkdir()
    garbled = tmp_path / "garbled"
    garbled.mkdir()
    (garbled / "run.json").write_text("{not json")
    (tmp_path / "not_a_run").mkdir()
    store.save_cell(_result())
    runs = {r.path.name: r for r in scan_runs([tmp_path, tmp_path / "missing-root"])}
    assert set(runs) == {"no_manifest", "garbled", store.path.name}
    assert runs["no_manifest"].problem == "run.json is missing"
    assert "unreadable" in runs["garbled"].problem
    ours = runs[store.path.name]
    assert ours.cells_done == 1 and ours.cells_total == 10
    # run.json says running, but no runner pid is recorded and no heartbeat or event was written.
    assert ours.status == "interrupted"


def test_scan_trusts_a_live_pid_only_with_a_fresh_heartbeat(tmp_path: Path, store: RunStore):
    manifest = store.read_manifest()
    manifest.runner_pid = os.getpid()  # a live process, as a reused pid would be
    store.write_manifest(manifest)
    (store.path / "heartbeat").touch()
    assert scan_runs([tmp_path])[0].status == "running"
    assert runner_alive(store.path)  # the engine's check agrees: one rule
    old = time.time() - 3600
    os.utime(store.path / "heartbeat", (old, old))
    assert scan_runs([tmp_path])[0].status == "interrupted"
    assert not runner_alive(store.path)


def test_a_fresh_run_without_a_runner_pid_is_starting_then_interrupted(tmp_path: Path, store: RunStore):
    (store.path / "heartbeat").touch()  # created a moment ago; its runner has not written its pid
    assert scan_runs([tmp_path])[0].status == "starting"
    assert not runner_alive(store.path)  # nothing to attach to or control yet
    old = time.time() - 3600
    os.utime(store.path / "heartbeat", (old, old))
    assert scan_runs([tmp_path])[0].status == "interrupted"


def test_scan_marks_a_dead_runner_interrupted(tmp_path: Path, store: RunStore):
    manifest = store.read_manifest()
    manifest.runner_pid = 2**22 + 12345  # above pid_max defaults: never a live process
    store.write_manifest(manifest)
    [summary] = scan_runs([tmp_path])
    assert summary.status == "interrupted"


def test_a_schema_1_cell_loads_as_round_1_repeat_1_beside_later_measurements(store: RunStore):
    key = CellKey(arm="st=3", scenario="chat_short", concurrency=8)
    legacy = _result(tok=900.0).model_dump(mode="json", exclude={"round", "repeat", "session", "node"})
    legacy["schema_version"] = 1
    atomic_write_text(store.legacy_cell_path(key), json.dumps(legacy))
    store.save_cell(_result(tok=1100.0).model_copy(update={"round": 2, "session": "s2"}))
    store.save_cell(_result(tok=0.0, status=CellStatus.FAILED).model_copy(update={"round": 3}))
    run = load_run(store.path)
    assert not run.problems
    assert sorted((m.round, m.repeat, m.total_throughput) for m in run.measurements) == [
        (1, 1, 900.0), (2, 1, 1100.0), (3, 1, 0.0)]
    assert run.cells[key].total_throughput == 1100.0  # the latest ok one, not the failed round 3
    assert store.done_slots() == {(key, 1, 1), (key, 2, 1)}


def test_a_measurement_of_a_newer_schema_is_refused_by_name(store: RunStore):
    newer = _result().model_dump(mode="json")
    newer["schema_version"] = 99
    path = store.cell_path(CellKey(arm="st=3", scenario="chat_short", concurrency=8))
    atomic_write_text(path, json.dumps(newer))
    measurements, problems = store.load_measurements()
    assert measurements == []
    [problem] = problems
    assert "written by a newer dspark-tui (this one reads up to 2)" in problem.reason


def test_a_run_written_by_a_newer_version_is_refused_in_one_line(store: RunStore):
    data = json.loads(store.manifest_path.read_text())
    data["schema_version"] = 7
    store.manifest_path.write_text(json.dumps(data))
    with pytest.raises(UserError) as refused:
        load_run(store.path)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{store.manifest_path}: written by a newer dspark-tui (run schema 7")
    with pytest.raises(UserError, match="written by a newer dspark-tui"):
        store.read_manifest()  # and so a resume is refused too


def test_scan_counts_cells_from_names_then_trusts_the_finished_count(tmp_path: Path, store: RunStore):
    for rnd in (1, 2):
        store.save_cell(_result(c=1).model_copy(update={"round": rnd}))
    store.save_cell(_result(c=16, status=CellStatus.FAILED))
    assert scan_runs([tmp_path])[0].cells_done == 2  # two cells have measurements
    manifest = store.read_manifest()
    manifest.cells_ok = 1  # what the runner wrote when it finished
    store.write_manifest(manifest)
    assert scan_runs([tmp_path])[0].cells_done == 1


def test_find_series_prefers_the_measurement_and_falls_back_to_a_schema_1_file(store: RunStore):
    key = CellKey(arm="st=3", scenario="chat_short", concurrency=8)
    legacy = store.path / "series" / "st_3" / "chat_short__c8.csv"
    atomic_write_text(legacy, "t,elapsed_s\n")
    assert store.find_series(key) == legacy
    atomic_write_text(store.series_path(key), "t,elapsed_s\n")
    assert store.find_series(key) == store.path / "series" / "st_3" / "chat_short__c8__r1p1.csv"


def test_a_cell_with_negative_or_infinite_numbers_loads_as_unreadable_and_is_redone(store: RunStore):
    key = CellKey(arm="st=3", scenario="chat_short", concurrency=8)
    for rnd, metrics in ((1, {"completed": -3, "total_throughput": 1000.0}),
                         (2, {"completed": 32, "total_throughput": -5.0}),
                         (3, {"completed": 32, "total_throughput": "Infinity"})):
        cell = _result().model_dump(mode="json") | {"round": rnd, "metrics": metrics}
        atomic_write_text(store.cell_path(key, rnd), json.dumps(cell))
    measurements, problems = store.load_measurements()
    assert measurements == [] and store.done_slots() == set()  # a resume measures them again
    reasons = [p.reason for p in problems]
    assert reasons == [f"invalid cell (metrics.{what}: must be a finite number ≥ 0, got {value}); skipped"
                       for what, value in (("completed", -3), ("total_throughput", -5.0),
                                           ("total_throughput", "inf"))]


def test_cells_outside_the_plan_are_named_once_and_kept_out_of_the_run(store: RunStore):
    store.save_cell(_result(c=1))
    store.save_cell(_result(arm="st=7", c=1))  # an arm the plan does not have
    store.save_cell(_result(arm="st=7", c=16))
    store.save_cell(_result(scenario="elsewhere", c=1))  # a scenario it does not have
    run = load_run(store.path)
    assert [m.key.id for m in run.measurements] == ["st=3/chat_short/c1"]
    assert list(run.cells) == [CellKey(arm="st=3", scenario="chat_short", concurrency=1)]
    assert run.manifest.arm_names() == ["st=3", "st=5"]
    assert [str(p) for p in run.problems] == [
        "cells: 3 measurement files of arms or scenarios outside the plan (arm 'st=3' scenario "
        "'elsewhere', arm 'st=7' scenario 'chat_short'); left out of the comparison"]
    assert len(list((store.path / "cells").rglob("*.json"))) == 4  # nothing deleted


def test_thousands_of_junk_files_are_one_problem_with_three_examples(store: RunStore):
    store.save_cell(_result(c=1))
    junk = store.path / "cells" / "junk"
    junk.mkdir(parents=True)
    for n in range(2000):
        (junk / f"x{n:04d}.json").write_text("{garbage" if n else "[]")
    run = load_run(store.path)
    assert len(run.measurements) == 1
    [problem] = run.problems
    assert str(problem) == ("cells: 2,000 unreadable files, e.g. cells/junk/x0000.json (not a cell "
                            "object), cells/junk/x0001.json (truncated or not JSON), "
                            "cells/junk/x0002.json (truncated or not JSON), …; skipped")


def test_three_bad_files_are_still_listed_one_by_one(store: RunStore):
    junk = store.path / "cells" / "junk"
    junk.mkdir(parents=True)
    for n in range(3):
        (junk / f"x{n}.json").write_text("{")
    assert [p.path for p in load_run(store.path).problems] == [f"cells/junk/x{n}.json" for n in range(3)]


def test_the_scan_lists_a_newer_run_as_unreadable(tmp_path: Path, store: RunStore):
    data = json.loads(store.manifest_path.read_text())
    data["schema_version"] = 99
    store.manifest_path.write_text(json.dumps(data))
    [summary] = scan_runs([tmp_path])
    assert not summary.readable
    assert summary.problem == ("run.json written by a newer dspark-tui (run schema 99; "
                               "this one reads up to 2); upgrade to open it")


def test_the_scan_counts_cells_by_measurement_names_not_junk(tmp_path: Path, store: RunStore):
    store.save_cell(_result(c=1))
    store.save_cell(_result(c=1).model_copy(update={"round": 2}))
    junk = store.path / "cells" / "st_3"
    for name in ("x1.json", "notes.json", ".chat_short__c8__r1p1.json.ab12cd34.tmp", "c__c2.txt"):
        (junk / name).write_text("{")
    assert scan_runs([tmp_path])[0].cells_done == 1
