"""exit_on_user_error: a user's mistake is one `error:` line on stderr and exit code 2; a bug keeps its traceback."""
import pytest

from common.errors import UserError, UserFileNotFoundError, error_line, exit_on_user_error


def raising(error):
    def main():
        raise error
    return main


def test_a_user_error_is_one_line_and_exit_code_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(raising(UserError("checkpoint --tacotron2 x.pt is a WaveGlow checkpoint\n expected it")))
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == "error: checkpoint --tacotron2 x.pt is a WaveGlow checkpoint expected it\n"
    assert captured.out == ""


def test_a_missing_user_file_is_a_user_error_and_still_a_file_not_found_error(capsys):
    error = UserFileNotFoundError("filelist not found: f.txt")
    assert isinstance(error, FileNotFoundError) and isinstance(error, ValueError)
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(raising(error))
    assert stopped.value.code == 2 and capsys.readouterr().err == "error: filelist not found: f.txt\n"


def test_a_system_exit_with_a_message_becomes_the_same_error_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(raising(SystemExit("error: --config-file c.json is not valid JSON")))
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "error: --config-file c.json is not valid JSON\n"  # no doubled "error: "
    with pytest.raises(SystemExit) as stopped:  # argparse's own exits (code 2, message already printed) pass through
        exit_on_user_error(raising(SystemExit(2)))
    assert stopped.value.code == 2 and capsys.readouterr().err == ""
    assert exit_on_user_error(lambda: None) is None  # a normal end is no exit at all


def test_other_exceptions_are_bugs_and_propagate():
    with pytest.raises(KeyError):
        exit_on_user_error(raising(KeyError("state_dict")))
    with pytest.raises(ValueError, match="a plain ValueError"):  # not every ValueError is the user's mistake
        exit_on_user_error(raising(ValueError("a plain ValueError")))


def test_error_line_joins_lines_and_strips_a_leading_error():
    assert error_line("error: a\n  b\n\nc") == "error: a b c"


def test_a_user_error_raised_in_a_data_loader_worker_keeps_only_its_message(capsys):
    import torch

    class MissingAudio(torch.utils.data.Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, index):
            raise UserFileNotFoundError("train.txt:2: audio file not found: wavs/a.wav")

    def main():
        next(iter(torch.utils.data.DataLoader(MissingAudio(), num_workers=1)))

    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(main)
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "error: train.txt:2: audio file not found: wavs/a.wav\n"
