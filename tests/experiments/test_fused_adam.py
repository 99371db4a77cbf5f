"""experiments/fused_adam on the demo's mel inverter: both optimizers are timed and end within rounding."""
from experiments.fused_adam.measure import main


def test_the_measurement_times_both_optimizers_and_they_agree_to_rounding(capsys):
    main(["--models", "mel inverter, make demo's", "--steps", "1"])
    row = capsys.readouterr().out.splitlines()[-1]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:3] == ["mel inverter, make demo's", "0.6 M", "12"]
    difference, change = cells[6].replace("(", "").replace(")", "").split()
    assert float(difference) < 1e-6 < 1e-3 < float(change)
