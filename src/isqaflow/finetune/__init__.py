"""LoRA fine-tuning of the ISQA feedback model on HotpotQA (answer + evidence)."""
