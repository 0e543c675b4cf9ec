"""Handlers for tests/e2e/test_data.py: the scientific stack inside the jail."""
import io
import os


def stack(request):
    import numpy as np
    import pandas as pd
    import matplotlib
    import matplotlib.pyplot as plt
    from zoneinfo import ZoneInfo

    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    inv = np.linalg.inv(a)  # LAPACK, reached through /etc/alternatives
    big = np.arange(40000, dtype=float).reshape(200, 200)
    dot = float((big @ big.T).trace())  # BLAS
    df = pd.DataFrame({"team": ["a", "b", "a", "b", "c"], "score": [1, 2, 3, 4, 5]})
    totals = df.groupby("team")["score"].sum().to_dict()
    when = pd.Timestamp("2024-07-01 12:00", tz="Europe/Paris").tz_convert("UTC").isoformat()
    fig, ax = plt.subplots()
    ax.bar(list(totals), list(totals.values()))
    ax.set_title("scores")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return {"inv": inv.round(6).tolist(), "dot": dot, "totals": totals, "utc": when,
            "tz": str(ZoneInfo("America/New_York").utcoffset(pd.Timestamp("2024-01-01"))),
            "png": buf.getvalue()[:8].hex(), "pngBytes": len(buf.getvalue()),
            "backend": matplotlib.get_backend()}


def read_input(request):
    with open("input/numbers.csv") as f:
        rows = [line.strip() for line in f if line.strip()]
    return {"cwd": os.getcwd(), "rows": rows}
