#!/usr/bin/env python3
"""Writes the seed corpus under tests/fuzz/corpus/ (docs/fuzzing.md).

The seeds are checked in; run this only to change them. Cache entries need
XXH3-64 checksums, taken from the system libxxhash (libxxhash0) via ctypes.
Naming: reject_* must be refused by the parser, accept_* accepted (the replay
test checks both); knownbug_* are inputs a parser mishandles today, each with
its own failing test in corpus_replay_test.cc; other names describe what the
seed covers.
"""
import ctypes
import hashlib
import hmac
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(data: bytes) -> int:
    return _xxh.XXH3_64bits(data, len(data))


def write(target: str, name: str, data) -> None:
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- manifest ---------------------------------------------------------------

FULL_PROBLEM = {
    "name": "qkv_proj", "m": 4096, "n": 3072, "k": 1024, "batch_count": 2,
    "a": {"type": "bf16", "layout": "row", "ld": 1024, "batch_stride": 4194304},
    "b": {"type": "bfloat16", "layout": "col", "ld": 1024, "batch_stride": 0},
    "c": {"type": "fp32", "layout": "row", "ld": 3072},
    "d": {"type": "f32", "layout": "row", "ld": 3072, "batch_stride": -1},
    "epilogue": {"alpha": 0.5, "beta": 1, "bias": "column", "bias_batch_stride": 3072,
                 "activation": "gelu_tanh"},
}


def manifests() -> None:
    t = "manifest"
    write(t, "accept_minimal.json", '{"problems":[]}')
    write(t, "accept_full.json", json.dumps({
        "version": 1,
        "options": {"tuning": "exhaustive", "backend": "jit", "pdl": False,
                    "allow_tf32": False, "pointer_alignment": 8},
        "problems": [FULL_PROBLEM,
                     {"m": 1, "n": 1, "k": 1, "dtype": "float16",
                      "epilogue": {"bias": "row", "activation": "silu"}}]}))
    write(t, "accept_backend_cublas_tf32.json", json.dumps({
        "options": {"backend": "cublas", "allow_tf32": True},
        "problems": [{"m": 128, "n": 128, "k": 128, "dtype": "f32"}]}))
    # Read as the default (kFast) before af03cf9: ManifestRegressions.
    write(t, "accept_tuning_heuristic.json",
          '{"options":{"tuning":"heuristic","backend":"auto","pdl":true},"problems":[]}')
    write(t, "accept_unicode_name.json",
          '{"problems":[{"name":"\\u0000\\ud83d\\ude00\\u00e9 \\"q\\"","m":1,"n":2,"k":3}]}')
    write(t, "accept_utf8_bom.json", b'\xef\xbb\xbf{"problems":[]}')
    write(t, "reject_duplicate_keys.json", '{"problems":[{"m":1,"m":2,"n":1,"k":1}]}')
    write(t, "accept_m_int64_max.json", '{"problems":[{"m":9223372036854775807,"n":1,"k":1}]}')
    write(t, "accept_alpha_denormal.json",
          '{"problems":[{"m":1,"n":1,"k":1,"epilogue":{"alpha":1e-45,"beta":-0.0}}]}')
    # Wraps to -1 (a syntax-level parse; ValidateProblem refuses it later).
    write(t, "m_uint64_max_reads_as_minus_one.json",
          '{"problems":[{"m":18446744073709551615,"n":1,"k":1}]}')
    write(t, "reject_empty.json", "")
    write(t, "reject_truncated.json", json.dumps({"problems": [FULL_PROBLEM]})[:150])
    write(t, "reject_top_level_array.json", "[]")
    write(t, "reject_problems_missing.json", '{"version":1}')
    write(t, "reject_problems_object.json", '{"problems":{"m":1}}')
    write(t, "reject_duplicate_problems_key.json", '{"problems":[],"problems":5}')
    write(t, "reject_problem_not_object.json", '{"problems":[7]}')
    write(t, "reject_m_string.json", '{"problems":[{"m":"128","n":1,"k":1}]}')
    write(t, "reject_m_float.json", '{"problems":[{"m":1.5,"n":1,"k":1}]}')
    write(t, "reject_m_too_big_for_uint64.json",
          '{"problems":[{"m":18446744073709551616,"n":1,"k":1}]}')
    write(t, "reject_version_2.json", '{"version":2,"problems":[]}')
    write(t, "reject_version_float.json", '{"version":1.0,"problems":[]}')
    write(t, "reject_options_not_object.json", '{"options":[],"problems":[]}')
    write(t, "reject_bad_tuning.json", '{"options":{"tuning":"slow"},"problems":[]}')
    write(t, "reject_pdl_int.json", '{"options":{"pdl":1},"problems":[]}')
    write(t, "reject_bad_dtype.json", '{"problems":[{"m":1,"n":1,"k":1,"dtype":"f64"}]}')
    write(t, "reject_bad_layout.json", '{"problems":[{"m":1,"n":1,"k":1,"a":{"layout":"diag"}}]}')
    write(t, "reject_operand_array.json", '{"problems":[{"m":1,"n":1,"k":1,"b":[]}]}')
    write(t, "reject_epilogue_array.json", '{"problems":[{"m":1,"n":1,"k":1,"epilogue":[]}]}')
    write(t, "reject_bad_activation.json",
          '{"problems":[{"m":1,"n":1,"k":1,"epilogue":{"activation":"tanh"}}]}')
    write(t, "reject_alpha_string.json",
          '{"problems":[{"m":1,"n":1,"k":1,"epilogue":{"alpha":"1"}}]}')
    write(t, "reject_invalid_utf8.json", b'{"problems":[{"name":"\xff\xfe","m":1,"n":1,"k":1}]}')
    write(t, "reject_lone_surrogate.json", '{"problems":[{"name":"\\ud800","m":1,"n":1,"k":1}]}')
    write(t, "reject_nan_literal.json",
          '{"problems":[{"m":1,"n":1,"k":1,"epilogue":{"alpha":NaN}}]}')
    write(t, "reject_deep_nesting.json", '{"problems":[' + "[" * 1000 + "]" * 1000 + "]}")
    # Known bugs (corpus_replay_test.cc, ManifestKnownBugs): an int field
    # wraps modulo 2^32 to an accepted value; a number beyond float's range
    # becomes infinity, which ManifestToJson writes as null.
    write(t, "knownbug_version_4294967297_wraps_to_1.json",
          '{"version":4294967297,"problems":[]}')
    write(t, "knownbug_pointer_alignment_4294967312_wraps_to_16.json",
          '{"options":{"pointer_alignment":4294967312},"problems":[]}')
    write(t, "knownbug_alpha_1e39_becomes_inf.json",
          '{"problems":[{"m":1,"n":1,"k":1,"epilogue":{"alpha":1e39}}]}')


# --- tuning record ----------------------------------------------------------

SAMPLE = {
    "format": 1, "device_name": "NVIDIA H100", "sm_count": 132, "driver_version": 13000,
    "cublas_version": 130000, "library_version": "0.1.0", "problem_signature": "m=64 bf16",
    "winner": "jit_a", "candidate_us": [{"name": "jit_a", "us": 81.5}, {"name": "cublasLt", "us": 90}],
    "reason": "jit 9% faster",
}


def record(**changes) -> str:
    r = dict(SAMPLE)
    for k, v in changes.items():
        if v is None and k != "candidate_us":
            r.pop(k, None)
        else:
            r[k] = v
    return json.dumps(r, separators=(",", ":"))


def tuning_records() -> None:
    t = "tuning_record"
    write(t, "accept_sample.json", record())
    write(t, "accept_no_candidates.json", record(candidate_us=[]))
    write(t, "accept_negative_zero_time.json",
          record(candidate_us=[{"name": "x", "us": -0.0}]))
    write(t, "accept_largest_double_time.json",
          record(candidate_us=[{"name": "x", "us": 1.7976931348623157e308}]))
    write(t, "accept_int_limits.json", record(sm_count=-2147483648, driver_version=2147483647))
    write(t, "reject_extra_fields.json", record(extra={"nested": [1, 2, {"x": None}]}))
    write(t, "reject_empty.json", "")
    write(t, "reject_truncated.json", record()[:60])
    write(t, "reject_array.json", "[1,2]")
    # Format 2 (regimes): its two fields are required; format 1 must not carry them.
    write(t, "accept_format_2_both_regimes.json",
          record(format=2, regimes=["streaming", "resident"],
                 resident_us=[{"name": "jit_a", "us": 60.5}]))
    write(t, "reject_format_2_without_regimes.json", record(format=2))
    write(t, "reject_format_1_with_regimes.json", record(regimes=["streaming"]))
    write(t, "reject_format_2_regime_not_string.json",
          record(format=2, regimes=[1], resident_us=[]))
    write(t, "reject_format_3.json", record(format=3))
    write(t, "reject_format_missing.json", record(format=None))
    write(t, "reject_format_4294967297.json", record(format=4294967297))
    write(t, "reject_sm_count_2147483648.json", record(sm_count=2147483648))
    write(t, "reject_sm_count_uint64_max.json",
          record().replace('"sm_count":132', '"sm_count":18446744073709551615'))
    write(t, "reject_sm_count_string.json", record(sm_count="132"))
    write(t, "reject_sm_count_1e300.json", record().replace('"sm_count":132', '"sm_count":1e300'))
    write(t, "reject_null_time.json", record(candidate_us=[{"name": "x", "us": None}]))
    write(t, "reject_negative_time.json", record(candidate_us=[{"name": "x", "us": -1e-300}]))
    write(t, "reject_time_overflows_double.json",
          record().replace('"us":81.5', '"us":1e309'))
    write(t, "reject_candidate_not_object.json", record(candidate_us=[3]))
    write(t, "reject_candidate_name_missing.json", record(candidate_us=[{"us": 1}]))
    write(t, "reject_candidates_object.json", record(candidate_us={"x": 1}))
    write(t, "reject_reason_missing.json", record(reason=None))
    write(t, "reject_deep_nesting.json", '{"format":1,"x":' + "[" * 1000 + "]" * 1000 + "}")


# --- cache entry ------------------------------------------------------------

KEY = b"abi=1\nnvrtc=13000\narch=sm_90a\nfamily=sm80\nconfig=128x128x32_s3\n"
CUBIN = b"\x7fELF\x02\x01\x01" + bytes(range(40))


def entry(key=KEY, payload=CUBIN, kind=0, version=1, reserved=0, key_size=None,
          payload_size=None, magic=b"JGMCACHE", seal=True) -> bytes:
    head = magic + struct.pack("<IIII", version, kind,
                               len(key) if key_size is None else key_size, reserved)
    head += struct.pack("<Q", len(payload) if payload_size is None else payload_size)
    body = head + key + payload
    return body + struct.pack("<Q", xxh3(body) if seal else 0)


def cache_entries() -> None:
    t = "cache_entry"
    good = entry()
    write(t, "accept_cubin.bin", good)
    write(t, "accept_tuning_record.bin", entry(kind=1, payload=record().encode()))
    write(t, "accept_empty_payload.bin", entry(payload=b""))
    write(t, "accept_empty_key.bin", entry(key=b""))
    write(t, "reject_empty.bin", b"")
    write(t, "reject_shorter_than_header.bin", good[:39])
    write(t, "reject_header_only.bin", good[:40])
    write(t, "reject_truncated.bin", good[: len(good) // 2])
    write(t, "reject_bad_magic.bin", entry(magic=b"JGMCACHF"))
    write(t, "reject_version_0.bin", entry(version=0))
    write(t, "reject_version_2.bin", entry(version=2))
    write(t, "reject_kind_7.bin", entry(kind=7))
    write(t, "reject_reserved_nonzero.bin", entry(reserved=1))
    write(t, "reject_key_size_4294967295.bin", entry(key_size=0xFFFFFFFF))
    write(t, "reject_payload_size_2pow64_minus1.bin", entry(payload_size=2**64 - 1))
    write(t, "reject_payload_size_2pow40.bin", entry(payload_size=2**40))
    # key_size + payload_size wraps to exactly the body size in 64 bits.
    body = len(KEY) + len(CUBIN)
    write(t, "reject_sizes_wrap_to_body.bin", entry(key_size=body + 1, payload_size=2**64 - 1))
    write(t, "reject_sizes_sum_too_small.bin", entry(payload_size=len(CUBIN) - 1))
    write(t, "reject_checksum.bin", entry(seal=False))
    flipped = bytearray(good)
    flipped[40] ^= 1
    write(t, "reject_flipped_key_byte.bin", bytes(flipped))


# --- remote value (cache/remote_value.h) -------------------------------------

REMOTE_SECRET = b"jitgemm-fuzz-remote-secret-0123"  # kFuzzRemoteSecret


def remote(inner: bytes, signed=True, secret=REMOTE_SECRET, flags=None, version=1,
           magic=b"JGMREMOT") -> bytes:
    head = magic + struct.pack("<II", version, (1 if signed else 0) if flags is None else flags)
    mac = hmac.new(secret, head + inner, hashlib.sha256).digest() if signed else bytes(32)
    return head + mac + inner


def remote_values() -> None:
    t = "remote_value"
    good = remote(entry())
    write(t, "accept_signed_cubin.bin", good)
    write(t, "accept_signed_tuning_record.bin", remote(entry(kind=1, payload=record().encode())))
    write(t, "reject_unsigned_with_secret.bin", remote(entry(), signed=False))
    write(t, "reject_wrong_secret.bin", remote(entry(), secret=b"not-the-fleet-secret-at-all"))
    write(t, "reject_signed_flag_cleared.bin", good[:12] + struct.pack("<I", 0) + good[16:])
    write(t, "reject_unknown_flags.bin", remote(entry(), flags=3))
    write(t, "reject_version_2.bin", remote(entry(), version=2))
    write(t, "reject_bad_magic.bin", remote(entry(), magic=b"JGMCACHE"))
    write(t, "reject_header_only.bin", good[:48])
    write(t, "reject_truncated.bin", good[: len(good) - 9])
    write(t, "reject_inner_checksum.bin", remote(entry(seal=False)))
    write(t, "reject_inner_payload_size_2pow40.bin", remote(entry(payload_size=2**40)))
    write(t, "reject_empty.bin", b"")


# --- kernel binary ----------------------------------------------------------

def binary(magic="jitgemm-kernel-binary-1", name="gemm_sm80_bf16_128x128x32_s3",
           lowered="_Z4gemmILi128ELi128EEvv", regs="128", spill="0", stack="0", size=None,
           cubin=CUBIN) -> bytes:
    size = str(len(cubin)) if size is None else size
    head = "\n".join([magic, name, lowered, regs, spill, stack, size]) + "\n"
    return head.encode() + cubin


def kernel_binaries() -> None:
    t = "kernel_binary"
    write(t, "accept_small.bin", binary())
    write(t, "accept_newlines_in_cubin.bin", binary(cubin=b"\n\n\n\n\n\n\n\n"))
    write(t, "accept_empty_kernel_name.bin", binary(name=""))
    write(t, "accept_negative_registers.bin", binary(regs="-1"))
    write(t, "accept_plus_and_spaces.bin", binary(regs="+64", spill=" 8 ", size=" %d" % len(CUBIN)))
    write(t, "reject_empty.bin", b"")
    write(t, "reject_six_header_lines.bin", b"jitgemm-kernel-binary-1\na\nb\n1\n2\n3\n")
    write(t, "reject_bad_magic.bin", binary(magic="jitgemm-kernel-binary-2"))
    write(t, "reject_empty_lowered_name.bin", binary(lowered=""))
    write(t, "reject_size_zero.bin", binary(size="0", cubin=b""))
    write(t, "reject_size_short_by_one.bin", binary(size=str(len(CUBIN) - 1)))
    write(t, "reject_size_2pow64_minus1.bin", binary(size=str(2**64 - 1)))
    write(t, "reject_size_2pow64.bin", binary(size=str(2**64)))
    write(t, "reject_size_negative.bin", binary(size="-1"))
    write(t, "reject_registers_2147483648.bin", binary(regs="2147483648"))
    write(t, "reject_registers_hex.bin", binary(regs="0x80"))
    write(t, "reject_truncated_cubin.bin", binary()[:-5])


# --- bundle manifest --------------------------------------------------------

ENTRY_PATH = "v1/cubin/ab/ab0123456789abcdef0123456789abcd.bin"


def bundle_manifest(**extra) -> dict:
    m = {"format": "jitgemm-bundle-1", "created_by": "jitgemm-cache 0.1.0",
         "created_at": "2026-11-23T00:00:00Z", "library_version": "0.1.0",
         "selection": "whole cache", "manifests": ["a.json"],
         "keys": {"arch": ["sm_90a"], "nvrtc": ["13000"]}, "entries": 1, "bytes": 10,
         "kinds": {"cubin": {"entries": 1, "bytes": 10}, "tuning": {"entries": 0, "bytes": 0}},
         "files": [{"path": ENTRY_PATH, "bytes": 10, "xxh3": "0123456789abcdef"}]}
    m.update(extra)
    return m


def bundle_manifests() -> None:
    t = "bundle_manifest"
    write(t, "accept_full.json", json.dumps(bundle_manifest(), indent=1))
    write(t, "accept_minimal.json", '{"format":"jitgemm-bundle-1","files":[]}')
    write(t, "reject_empty.json", "")
    write(t, "reject_deep_brackets.json", "[" * 4096)
    write(t, "reject_deep_keys.json", '{"format":"jitgemm-bundle-1","files":[],"keys":'
          + '{"a":' * 20 + '[]' + '}' * 21)
    write(t, "reject_duplicate_files.json",
          '{"format":"jitgemm-bundle-1","files":[],"files":[]}')
    write(t, "reject_unknown_field.json", json.dumps(bundle_manifest(signer="me")))
    write(t, "reject_unknown_file_field.json", json.dumps(bundle_manifest(
        files=[{"path": ENTRY_PATH, "bytes": 10, "xxh3": "0", "mode": 511}])))
    write(t, "reject_repeated_path.json", json.dumps(bundle_manifest(
        files=[{"path": ENTRY_PATH, "bytes": 10, "xxh3": "0"}] * 2)))
    write(t, "reject_traversal_path.json", json.dumps(bundle_manifest(
        files=[{"path": "../v1/cubin/ab/x.bin", "bytes": 10, "xxh3": "0"}])))
    write(t, "reject_negative_bytes.json", json.dumps(bundle_manifest(bytes=-1)))
    write(t, "reject_other_format.json", json.dumps(bundle_manifest(format="jitgemm-bundle-2")))


def main() -> int:
    manifests()
    tuning_records()
    cache_entries()
    bundle_manifests()
    kernel_binaries()
    remote_values()
    return 0


if __name__ == "__main__":
    sys.exit(main())
