"""sift.ray on a local Ray cluster (2 CPUs, on 127.0.0.1): read_sift against pyarrow's
answer, Ray's projection and predicate pushdown, what each read task reads, and writing
with SiftDatasink."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import ray
import sift
import sift.ray

FILES = 8
YEAR_FILTER = "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'"
Q6_FILTER = (YEAR_FILTER + " and l_discount between 0.05 and 0.07 and l_quantity < 24")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def parts(lineitem_table, tmp_path_factory):
    """lineitem sorted by ship date and split into 8 Sift files of several blocks, so
    that a date filter rules out whole files and blocks by their zone maps."""
    table = lineitem_table.sort_by("l_shipdate")
    d = tmp_path_factory.mktemp("ray-parts")
    step = -(-table.num_rows // FILES)
    for i in range(FILES):
        sift.write(table.slice(i * step, step), d / f"part-{i}.sift", block_rows=2048)
    return d, table


def dec(text: str) -> pa.Scalar:
    return pa.scalar(Decimal(text), pa.decimal128(15, 2))


def q6_reference(table: pa.Table) -> pa.Table:
    d = pc.field("l_discount")
    expr = ((pc.field("l_shipdate") >= datetime.date(1994, 1, 1))
            & (pc.field("l_shipdate") < datetime.date(1995, 1, 1))
            & (d >= dec("0.05")) & (d <= dec("0.07"))
            & (pc.field("l_quantity") < dec("24")))
    return table.filter(expr).select(["l_orderkey", "l_linenumber", "l_extendedprice",
                                      "l_discount"])


def sorted_rows(t: pa.Table) -> pa.Table:
    return t.sort_by([("l_orderkey", "ascending"), ("l_linenumber", "ascending")])


def test_read_sift_equals_a_local_scan(cluster, parts):
    d, table = parts
    columns = ["l_orderkey", "l_linenumber", "l_extendedprice", "l_discount"]
    ds = sift.ray.read_sift(str(d), columns=columns, filter=Q6_FILTER)
    got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    want = q6_reference(table)
    assert want.num_rows > 0
    assert sorted_rows(got).equals(sorted_rows(want))
    local = sift.dataset(str(d)).to_table(columns, Q6_FILTER)
    assert sorted_rows(got).equals(sorted_rows(local))
    assert ds.count() == want.num_rows


def test_ray_pushes_projection_and_predicate_into_the_scan(cluster, parts, capsys):
    from ray.data.expressions import col

    d, table = parts
    ds = (sift.ray.read_sift(str(d))
          .filter(expr=col("l_quantity") < 24)
          .select_columns(["l_orderkey", "l_quantity"]))
    got = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    want = table.filter(pc.field("l_quantity") < dec("24"))
    assert got.num_rows == want.num_rows
    assert got.column_names == ["l_orderkey", "l_quantity"]
    # The optimized plan reads with the filter and projection inside the source.
    capsys.readouterr()
    ds.explain()
    optimized = capsys.readouterr().out.split("Logical Plan (Optimized)")[1]
    optimized = optimized.split("Physical Plan")[0]
    assert "Read[ReadSift]" in optimized
    assert "Filter" not in optimized and "Project" not in optimized, optimized


def test_each_task_reads_only_the_blocks_its_zone_maps_leave(cluster, parts):
    d, table = parts
    source = sift.ray.SiftDatasource(str(d), columns=["l_extendedprice"],
                                     filter=YEAR_FILTER)
    tasks = source.get_read_tasks(FILES)
    assert len(tasks) == FILES
    assert all(t.metadata.input_files and len(t.metadata.input_files) == 1 for t in tasks)
    years = pc.year(table["l_shipdate"])
    want = pc.sum(pc.equal(years, 1994)).as_py()
    got, untouched = 0, 0
    for t in tasks:
        (location,) = t.metadata.input_files
        f = sift.open(location)
        rows = (0, f.num_rows)
        result, stats = sift.ray.read_fragment(location, rows, ["l_extendedprice"],
                                               YEAR_FILTER)
        got += result.num_rows
        # Every block is either read or pruned by its zone map.
        assert stats["blocks_total"] == f.num_blocks
        if result.num_rows == 0:
            untouched += 1
            assert stats["blocks_pruned"] == f.num_blocks and stats["bytes_read"] == 0
        else:
            assert stats["blocks_pruned"] < f.num_blocks
    assert got == want
    # lineitem spans 7 years in 8 sorted files: most files hold no 1994 row.
    assert untouched >= FILES - 3


def test_sift_datasink_writes_files_that_read_back(cluster, parts, tmp_path):
    d, table = parts
    small = table.slice(0, 10_000)
    ray.data.from_arrow(small).repartition(3).write_datasink(
        sift.ray.SiftDatasink(tmp_path / "out"))
    files = sorted((tmp_path / "out").glob("*.sift"))
    assert 1 <= len(files) <= 3
    back = sift.dataset(str(tmp_path / "out")).to_table()
    assert sorted_rows(back).equals(sorted_rows(small))
