"""``prh`` leaves a torchrun process group its command joined, however the command ends."""

import socket

import pytest

torch = pytest.importorskip("torch")
dist = torch.distributed

from prh.cli import main  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available(), reason="torch built without distributed")
@pytest.mark.parametrize("argv", [["train"], ["train", "--print-config", "--preset", "tiny"]])
def test_a_command_leaves_the_group_it_ran_in(argv, capsys):
    # One rank of one (gloo), as torchrun would have set up; a refused and a finished command.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}",
                            rank=0, world_size=1)  # fmt: skip
    try:
        code = main(argv)
        assert code in (0, 2), capsys.readouterr().err
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
