"""LoRA fine-tuning of the feedback model (rule finetune_feedback)."""

from pathlib import Path

from isqaflow.finetune.lora import LoraSettings, train
from isqaflow.runtime import job

with job(snakemake) as ctx:
    train(
        base=snakemake.params.base,
        train_path=snakemake.input.train,
        adapter_dir=Path(snakemake.output.weights).parent,
        log_path=snakemake.output.train_log,
        settings=LoraSettings.from_dict(snakemake.params.settings),
        checkpoint_dir=snakemake.params.checkpoint_dir,
        threads=ctx.threads,
    )
