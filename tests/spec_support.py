"""A small validation spec in the schema, as someone else would write it (shared by the spec tests)."""

from __future__ import annotations

#: one vLLM instance, two short drained stages
SMALL = {
    "name": "small-test",
    "source": {"repo": "example/repo", "path": "results.md", "commit": "0" * 40, "url": "https://example.org",
               "note": "hand-made", "harness": "blis"},
    "cluster": {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "instances": 1, "kv_tokens": None,
                "max_num_batched_tokens": 2048, "max_num_seqs": 128, "block_size": 16, "weight_dtype": "bf16",
                "kv_dtype": "bf16", "cpu_offload": 0, "gpu_memory_utilization": 0.9, "engine": "vllm-0.15.1"},
    "workload": {"kind": "shared-prefix", "params": {"num_groups": 2, "num_prompts_per_group": 3,
                                                      "system_prompt_len": 100, "question_len": 200,
                                                      "output_len": 20, "enable_multi_turn_chat": False},
                 "seed": 0},
    "load": {"arrival": "constant", "stages": [{"rate": 4, "duration": 3}, {"rate": 8, "duration": 2}],
             "measured_stages": "all", "interval_s": 1.0},
    "routers": {"vllm": {"policy": "round-robin", "params": {}}},
    "measured": {"vllm": {"e2e_mean_s": 0.5, "ttft_mean_s": 0.03, "itl_mean_s": 0.009}},
}
