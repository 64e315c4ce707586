"""Calibration fits kept on disk (core.performance.fitcache): read back equal, made again whenever what they read
changes or the file is damaged, never written when disabled."""

from __future__ import annotations

import json

import pytest

from core.performance import calibration, fitcache

ROUTE = ("llama70b-fp8", "H200 SXM", 1)  # five vendor points in data/benchmarks.csv


@pytest.fixture
def route(seed_catalog):
    stack = next(s for s in seed_catalog.stacks if s.stack_id == ROUTE[0])
    gpu = seed_catalog.gpu(ROUTE[1])
    return stack, gpu, ROUTE[2], list(seed_catalog.benchmarks)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty fit folder and empty in-process caches, so every calibrate() below reads the folder or fits."""
    folder = tmp_path / "fits"
    monkeypatch.setenv("HANGOVER_FIT_CACHE", str(folder))
    caches = (calibration._calibrate_cached, calibration._fit_cached)  # the real ones: tests patch the second
    for c in caches:
        c.cache_clear()
    yield folder
    for c in caches:
        c.cache_clear()


def _no_fitting(monkeypatch):
    def refuse(*_args, **_kw):
        raise AssertionError("fitted again: the file should have held this fit")
    monkeypatch.setattr(calibration, "_fit_cached", refuse)


def _fits_made(monkeypatch) -> list:
    made: list = []
    real = calibration._fit_cached

    def counting(*args):
        made.append(args[0].stack_id)
        return real(*args)
    monkeypatch.setattr(calibration, "_fit_cached", counting)
    return made


def test_a_fit_read_back_from_its_file_is_the_fit_made(route, fresh, monkeypatch):
    """The first calibrate() fits and writes one file; the next process (in-process caches cleared) reads it
    and gets the same fit, every factor and every point's error equal to the last bit (JSON keeps floats exact),
    without fitting."""
    stack, gpu, g, points = route
    made = calibration.calibrate(stack, gpu, g, points)
    assert made.fit is not None and len(list(fresh.glob("*.json"))) == 1
    calibration._calibrate_cached.cache_clear()
    _no_fitting(monkeypatch)
    read = calibration.calibrate(stack, gpu, g, points)
    assert read.fit == made.fit and read.efficiency == made.efficiency and read.anchors == made.anchors


def test_an_edited_point_a_record_or_the_code_is_fitted_again(route, fresh, monkeypatch):
    """The key is everything the fit reads: a point's figure edited, the GPU's bandwidth edited or the model's
    code changed each give a new file and a fit of their own, never the old one."""
    stack, gpu, g, points = route
    base = calibration.calibrate(stack, gpu, g, points)
    made = _fits_made(monkeypatch)
    mine = [p for p in points if (p.stack_id, p.gpu, p.gpus_per_replica) == ROUTE]
    edited = [p.model_copy(update={"output_tokens_per_s_total": p.output_tokens_per_s_total * 1.2})
              if p is mine[0] else p for p in points]
    calibration._calibrate_cached.cache_clear()
    moved = calibration.calibrate(stack, gpu, g, edited)
    assert made == [ROUTE[0]] and moved.fit != base.fit
    calibration._calibrate_cached.cache_clear()
    calibration.calibrate(stack, gpu.model_copy(update={"hbm_tb_per_s": gpu.hbm_tb_per_s * 0.9}), g, points)
    calibration._calibrate_cached.cache_clear()
    monkeypatch.setattr(fitcache, "code_fingerprint", lambda: "another model")
    calibration.calibrate(stack, gpu, g, points)
    assert made == [ROUTE[0]] * 3 and len(list(fresh.glob("*.json"))) == 4


@pytest.mark.parametrize("damage", ["{not json", json.dumps({"format": 1, "fit": {"stack_id": "x"}}),
                                    json.dumps({"format": 99, "fit": {}}), "", "text factor"])
def test_a_damaged_file_is_fitted_again_and_rewritten(route, fresh, monkeypatch, damage):
    """A file cut short, of another layout or holding no fit is not an error: the fit is made again, equal to
    the one made fresh, and the file is written whole again."""
    stack, gpu, g, points = route
    good = calibration.calibrate(stack, gpu, g, points)
    (path,) = fresh.glob("*.json")
    if damage == "text factor":  # the right layout with a factor that is not a number
        data = json.loads(path.read_text(encoding="utf-8"))
        data["fit"]["efficiency"]["mem"] = "0.8"
        damage = json.dumps(data)
    path.write_text(damage, encoding="utf-8")
    calibration._calibrate_cached.cache_clear()
    calibration._fit_cached.cache_clear()
    made = _fits_made(monkeypatch)
    again = calibration.calibrate(stack, gpu, g, points)
    assert made == [ROUTE[0]] and again.fit == good.fit
    assert fitcache._from_json(json.loads(path.read_text(encoding="utf-8"))) == good.fit
    assert not list(fresh.glob(".fit-*"))  # no temporary file left behind


def test_disabled_writes_nothing(route, fresh, monkeypatch):
    """HANGOVER_FIT_CACHE=off: every fit is made in process and no folder is created."""
    monkeypatch.setenv("HANGOVER_FIT_CACHE", "off")
    stack, gpu, g, points = route
    assert calibration.calibrate(stack, gpu, g, points).fit is not None
    assert not fresh.exists()


def test_no_home_directory_fits_in_process(route, fresh, monkeypatch):
    """Without HANGOVER_FIT_CACHE, XDG_CACHE_HOME or a home directory to be found, the fit is made in process."""
    monkeypatch.delenv("HANGOVER_FIT_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(fitcache.Path, "home", staticmethod(no_home))
    assert fitcache.cache_dir() is None
    stack, gpu, g, points = route
    assert calibration.calibrate(stack, gpu, g, points).fit is not None
