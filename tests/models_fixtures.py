#!/usr/bin/env python3
"""Write the checkpoint fixtures of tests/models/ (committed; a few KB each).

Usage: models_fixtures.py OUTDIR      (the committed copy is tests/models/)

Each fixture is a directory holding config.json and the safetensors file(s)
of one family, with the tensor names, layouts and dtypes the real files of
that family have, written by hand from the Hugging Face / timm / nanoGPT
model code (no `transformers` package: Debian has none):

  gpt2        HF GPT2LMHeadModel: "transformer." prefix, Conv1D weights
              [in, out], fused c_attn, the old attn.bias (BOOL causal mask)
              and attn.masked_bias buffers, scale_attn_by_inverse_layer_idx;
              F32, 3 layers
  nanogpt     nanoGPT ckpt.pt after torch.compile ("_orig_mod." prefix),
              Linear [out, in], bias=False, its float attn.bias buffer, tied
              lm_head; BF16; written by python/attncheck/torch_convert.py
              from a real torch.save of {"model", "model_args"}
  bert        BertModel without prefix, old LayerNorm gamma/beta names,
              pooler; F32
  roberta     RobertaForMaskedLM: "roberta." prefix, lm_head; F16
  distilbert  DistilBertForMaskedLM: "distilbert." prefix, sharded in two
              files with model.safetensors.index.json; F32
  llama       LlamaForCausalLM, GQA 4 query / 2 key-value heads, rotate_half
              layout; F32; sharded in two files
  llama_meta  the same weights with q_proj, k_proj rows in Meta's original
              interleaved order (the inverse of HF's conversion permute)
  mistral     sliding_window 3, GQA 4/1, rope_theta 1e6; BF16
  qwen2       q/k/v biases, GQA 4/2; F16
  vit         HF ViTForImageClassification ("vit." prefix), 8x8 images in
              4x4 patches; F32
  vit_timm    timm vit_tiny layout (blocks.N.attn.qkv), head; F16
  layer       attncheck_layer: RMSNorm, interleaved RoPE, causal with a
              sliding window, GQA, head size 4 on width 12, scale 0.3; F64
  layer_ln    attncheck_layer: LayerNorm, every bias, no mask; F32

Weights are seeded (torch.manual_seed), so a rerun writes the same files
with the same torch.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "attncheck"))
import torch_convert  # noqa: E402

g = torch.Generator().manual_seed(20261121)


def rnd(*shape, std=0.5):
    return torch.randn(*shape, generator=g, dtype=torch.float64) * std


def ln(d):
    return 1 + rnd(d, std=0.2), rnd(d, std=0.1)


def cast(sd, dtype):
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in sd.items()}


def write(out, name, cfg, sd, dtype, shards=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    sd = cast(sd, dtype)
    if shards is None:
        torch_convert.save_safetensors(os.path.join(d, "model.safetensors"), sd,
                                       {"format": "pt"})
    else:
        wm = {}
        for i, pred in enumerate(shards):
            fn = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
            part = {k: v for k, v in sd.items() if pred(k) and k not in wm}
            for k in part:
                wm[k] = fn
            torch_convert.save_safetensors(os.path.join(d, fn), part, {"format": "pt"})
        assert set(wm) == set(sd), "shards miss tensors"
        total = sum(v.numel() * v.element_size() for v in sd.values())
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))},
                      f, indent=2)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")


def gpt2(out):
    C, H, L, V, P = 8, 2, 3, 24, 12
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": C,
           "n_head": H, "n_layer": L, "n_positions": P, "n_ctx": P, "vocab_size": V,
           "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
           "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": True,
           "reorder_and_upcast_attn": False, "torch_dtype": "float32"}
    sd = {"transformer.wte.weight": rnd(V, C), "transformer.wpe.weight": rnd(P, C, std=0.2)}
    for i in range(L):
        p = "transformer.h.%d." % i
        sd[p + "ln_1.weight"], sd[p + "ln_1.bias"] = ln(C)
        sd[p + "attn.c_attn.weight"] = rnd(C, 3 * C)     # Conv1D: [in, out]
        sd[p + "attn.c_attn.bias"] = rnd(3 * C, std=0.2)
        sd[p + "attn.c_proj.weight"] = rnd(C, C)
        sd[p + "attn.c_proj.bias"] = rnd(C, std=0.1)
        sd[p + "ln_2.weight"], sd[p + "ln_2.bias"] = ln(C)
        sd[p + "mlp.c_fc.weight"] = rnd(C, 4 * C)
        sd[p + "mlp.c_fc.bias"] = rnd(4 * C, std=0.1)
        sd[p + "mlp.c_proj.weight"] = rnd(4 * C, C, std=0.3)
        sd[p + "mlp.c_proj.bias"] = rnd(C, std=0.1)
        sd[p + "attn.bias"] = torch.tril(torch.ones(P, P, dtype=torch.bool)).view(1, 1, P, P)
        sd[p + "attn.masked_bias"] = torch.tensor(-1e4)
    sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"] = ln(C)
    write(out, "gpt2", cfg, sd, torch.float32)


def nanogpt(out):
    C, H, L, V, T = 8, 2, 2, 24, 12
    sd = {"_orig_mod.transformer.wte.weight": rnd(V, C),
          "_orig_mod.transformer.wpe.weight": rnd(T, C, std=0.2)}
    for i in range(L):
        p = "_orig_mod.transformer.h.%d." % i
        sd[p + "ln_1.weight"] = 1 + rnd(C, std=0.2)
        sd[p + "attn.c_attn.weight"] = rnd(3 * C, C)     # nn.Linear: [out, in]
        sd[p + "attn.c_proj.weight"] = rnd(C, C)
        sd[p + "attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        sd[p + "ln_2.weight"] = 1 + rnd(C, std=0.2)
        sd[p + "mlp.c_fc.weight"] = rnd(4 * C, C)
        sd[p + "mlp.c_proj.weight"] = rnd(C, 4 * C, std=0.3)
    sd["_orig_mod.transformer.ln_f.weight"] = 1 + rnd(C, std=0.2)
    sd["_orig_mod.lm_head.weight"] = sd["_orig_mod.transformer.wte.weight"]
    sd = cast(sd, torch.bfloat16)
    # no Python float in the pickle: torch 1.13's weights_only unpickler has
    # no BINFLOAT (torch_convert.py says so); dropout 0 as an int
    args = {"n_layer": L, "n_head": H, "n_embd": C, "block_size": T, "bias": False,
            "vocab_size": V, "dropout": 0}
    d = os.path.join(out, "nanogpt")
    os.makedirs(d, exist_ok=True)
    ck = os.path.join(d, "ckpt.pt")
    torch.save({"model": sd, "model_args": args, "iter_num": 0,
                "best_val_loss": torch.tensor(1.0), "config": {"dataset": "none"}}, ck)
    tmp = d + ".new"
    torch_convert.from_torch(ck, None, tmp)
    os.unlink(ck)
    for fn in os.listdir(tmp):
        os.replace(os.path.join(tmp, fn), os.path.join(d, fn))
    os.rmdir(tmp)


def bert_like(prefix, C, H, L, F, V, P, T, gamma):
    sd = {prefix + "embeddings.word_embeddings.weight": rnd(V, C),
          prefix + "embeddings.position_embeddings.weight": rnd(P, C, std=0.2)}
    if T:
        sd[prefix + "embeddings.token_type_embeddings.weight"] = rnd(T, C, std=0.2)
    w, b = ("gamma", "beta") if gamma else ("weight", "bias")
    sd[prefix + "embeddings.LayerNorm." + w], sd[prefix + "embeddings.LayerNorm." + b] = ln(C)
    for i in range(L):
        p = prefix + "encoder.layer.%d." % i
        for n in ("query", "key", "value"):
            sd[p + "attention.self.%s.weight" % n] = rnd(C, C)
            sd[p + "attention.self.%s.bias" % n] = rnd(C, std=0.2)
        sd[p + "attention.output.dense.weight"] = rnd(C, C)
        sd[p + "attention.output.dense.bias"] = rnd(C, std=0.1)
        sd[p + "attention.output.LayerNorm." + w], sd[p + "attention.output.LayerNorm." + b] = ln(C)
        sd[p + "intermediate.dense.weight"] = rnd(F, C)
        sd[p + "intermediate.dense.bias"] = rnd(F, std=0.1)
        sd[p + "output.dense.weight"] = rnd(C, F, std=0.3)
        sd[p + "output.dense.bias"] = rnd(C, std=0.1)
        sd[p + "output.LayerNorm." + w], sd[p + "output.LayerNorm." + b] = ln(C)
    return sd


def bert(out):
    C, H, L, F, V, P = 12, 3, 2, 24, 30, 16
    cfg = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": C,
           "num_attention_heads": H, "num_hidden_layers": L, "intermediate_size": F,
           "hidden_act": "gelu", "max_position_embeddings": P, "type_vocab_size": 2,
           "vocab_size": V, "layer_norm_eps": 1e-12, "position_embedding_type": "absolute",
           "pad_token_id": 0}
    sd = bert_like("", C, H, L, F, V, P, 2, gamma=True)
    sd["pooler.dense.weight"], sd["pooler.dense.bias"] = rnd(C, C), rnd(C)
    write(out, "bert", cfg, sd, torch.float32)


def roberta(out):
    C, H, L, F, V, P = 8, 2, 2, 16, 30, 20
    cfg = {"architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "hidden_size": C,
           "num_attention_heads": H, "num_hidden_layers": L, "intermediate_size": F,
           "hidden_act": "gelu", "max_position_embeddings": P, "type_vocab_size": 1,
           "vocab_size": V, "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0,
           "eos_token_id": 2}
    sd = bert_like("roberta.", C, H, L, F, V, P, 1, gamma=False)
    sd["lm_head.dense.weight"], sd["lm_head.dense.bias"] = rnd(C, C), rnd(C)
    sd["lm_head.layer_norm.weight"], sd["lm_head.layer_norm.bias"] = ln(C)
    sd["lm_head.bias"] = rnd(V)
    write(out, "roberta", cfg, sd, torch.float16)


def distilbert(out):
    C, H, L, F, V, P = 8, 2, 2, 16, 30, 16
    cfg = {"architectures": ["DistilBertForMaskedLM"], "model_type": "distilbert", "dim": C,
           "n_heads": H, "n_layers": L, "hidden_dim": F, "activation": "gelu",
           "max_position_embeddings": P, "vocab_size": V, "sinusoidal_pos_embds": False,
           "pad_token_id": 0}
    pre = "distilbert."
    sd = {pre + "embeddings.word_embeddings.weight": rnd(V, C),
          pre + "embeddings.position_embeddings.weight": rnd(P, C, std=0.2)}
    sd[pre + "embeddings.LayerNorm.weight"], sd[pre + "embeddings.LayerNorm.bias"] = ln(C)
    for i in range(L):
        p = pre + "transformer.layer.%d." % i
        for n in ("q_lin", "k_lin", "v_lin", "out_lin"):
            sd[p + "attention.%s.weight" % n] = rnd(C, C)
            sd[p + "attention.%s.bias" % n] = rnd(C, std=0.2)
        sd[p + "sa_layer_norm.weight"], sd[p + "sa_layer_norm.bias"] = ln(C)
        sd[p + "ffn.lin1.weight"], sd[p + "ffn.lin1.bias"] = rnd(F, C), rnd(F, std=0.1)
        sd[p + "ffn.lin2.weight"], sd[p + "ffn.lin2.bias"] = rnd(C, F, std=0.3), rnd(C, std=0.1)
        sd[p + "output_layer_norm.weight"], sd[p + "output_layer_norm.bias"] = ln(C)
    sd["vocab_transform.weight"], sd["vocab_transform.bias"] = rnd(C, C), rnd(C)
    sd["vocab_layer_norm.weight"], sd["vocab_layer_norm.bias"] = ln(C)
    sd["vocab_projector.bias"] = rnd(V)
    write(out, "distilbert", cfg, sd, torch.float32,
          shards=[lambda k: "layer.1." not in k and "vocab" not in k, lambda k: True])


def llama_sd(C, H, KV, L, F, V, qkv_bias):
    dk = C // H
    sd = {"model.embed_tokens.weight": rnd(V, C)}
    for i in range(L):
        p = "model.layers.%d." % i
        sd[p + "input_layernorm.weight"] = 1 + rnd(C, std=0.2)
        sd[p + "self_attn.q_proj.weight"] = rnd(H * dk, C)
        sd[p + "self_attn.k_proj.weight"] = rnd(KV * dk, C)
        sd[p + "self_attn.v_proj.weight"] = rnd(KV * dk, C)
        if qkv_bias:
            sd[p + "self_attn.q_proj.bias"] = rnd(H * dk, std=0.3)
            sd[p + "self_attn.k_proj.bias"] = rnd(KV * dk, std=0.3)
            sd[p + "self_attn.v_proj.bias"] = rnd(KV * dk, std=0.3)
        sd[p + "self_attn.o_proj.weight"] = rnd(C, H * dk)
        sd[p + "post_attention_layernorm.weight"] = 1 + rnd(C, std=0.2)
        sd[p + "mlp.gate_proj.weight"] = rnd(F, C)
        sd[p + "mlp.up_proj.weight"] = rnd(F, C)
        sd[p + "mlp.down_proj.weight"] = rnd(C, F, std=0.3)
    sd["model.norm.weight"] = 1 + rnd(C, std=0.2)
    sd["lm_head.weight"] = rnd(V, C)
    return sd


def llama(out):
    C, H, KV, L, F, V = 16, 4, 2, 2, 24, 30
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C,
           "num_attention_heads": H, "num_key_value_heads": KV, "num_hidden_layers": L,
           "intermediate_size": F, "hidden_act": "silu", "max_position_embeddings": 32,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": None,
           "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
           "vocab_size": V, "pretraining_tp": 1}
    sd = llama_sd(C, H, KV, L, F, V, False)
    write(out, "llama", cfg, sd, torch.float32,
          shards=[lambda k: "layers.1." not in k and "lm_head" not in k, lambda k: True])
    # Meta's interleaved layout: HF's convert_llama_weights_to_hf.py permutes
    # w (n_heads, dk/2, 2, C) -> (n_heads, 2, dk/2, C); undo it
    dk = C // H

    def unpermute(w, nh):
        return w.view(nh, 2, dk // 2, C).transpose(1, 2).reshape(nh * dk, C)
    meta = dict(sd)
    for i in range(L):
        p = "model.layers.%d.self_attn." % i
        meta[p + "q_proj.weight"] = unpermute(sd[p + "q_proj.weight"], H)
        meta[p + "k_proj.weight"] = unpermute(sd[p + "k_proj.weight"], KV)
    write(out, "llama_meta", cfg, meta, torch.float32)


def mistral(out):
    C, H, KV, L, F, V = 16, 4, 1, 2, 24, 30
    cfg = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": C,
           "num_attention_heads": H, "num_key_value_heads": KV, "num_hidden_layers": L,
           "intermediate_size": F, "hidden_act": "silu", "max_position_embeddings": 32,
           "rms_norm_eps": 1e-5, "rope_theta": 1e6, "sliding_window": 3, "vocab_size": V,
           "tie_word_embeddings": False}
    write(out, "mistral", cfg, llama_sd(C, H, KV, L, F, V, False), torch.bfloat16)


def qwen2(out):
    C, H, KV, L, F, V = 16, 4, 2, 2, 24, 30
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": C,
           "num_attention_heads": H, "num_key_value_heads": KV, "num_hidden_layers": L,
           "intermediate_size": F, "hidden_act": "silu", "max_position_embeddings": 32,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "use_sliding_window": False,
           "sliding_window": 32, "max_window_layers": L, "vocab_size": V,
           "tie_word_embeddings": False}
    write(out, "qwen2", cfg, llama_sd(C, H, KV, L, F, V, True), torch.float16)


def vit(out):
    C, H, L, F, I, P, CH = 12, 3, 2, 24, 8, 4, 3
    N = 1 + (I // P) ** 2
    cfg = {"architectures": ["ViTForImageClassification"], "model_type": "vit",
           "hidden_size": C, "num_attention_heads": H, "num_hidden_layers": L,
           "intermediate_size": F, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
           "image_size": I, "patch_size": P, "num_channels": CH, "qkv_bias": True,
           "encoder_stride": P, "id2label": {"0": "a", "1": "b"}, "label2id": {"a": 0, "b": 1}}
    sd = {"vit.embeddings.cls_token": rnd(1, 1, C),
          "vit.embeddings.position_embeddings": rnd(1, N, C, std=0.2),
          "vit.embeddings.patch_embeddings.projection.weight": rnd(C, CH, P, P, std=0.3),
          "vit.embeddings.patch_embeddings.projection.bias": rnd(C, std=0.1)}
    for i in range(L):
        p = "vit.encoder.layer.%d." % i
        sd[p + "layernorm_before.weight"], sd[p + "layernorm_before.bias"] = ln(C)
        for n in ("query", "key", "value"):
            sd[p + "attention.attention.%s.weight" % n] = rnd(C, C)
            sd[p + "attention.attention.%s.bias" % n] = rnd(C, std=0.2)
        sd[p + "attention.output.dense.weight"] = rnd(C, C)
        sd[p + "attention.output.dense.bias"] = rnd(C, std=0.1)
        sd[p + "layernorm_after.weight"], sd[p + "layernorm_after.bias"] = ln(C)
        sd[p + "intermediate.dense.weight"] = rnd(F, C)
        sd[p + "intermediate.dense.bias"] = rnd(F, std=0.1)
        sd[p + "output.dense.weight"] = rnd(C, F, std=0.3)
        sd[p + "output.dense.bias"] = rnd(C, std=0.1)
    sd["vit.layernorm.weight"], sd["vit.layernorm.bias"] = ln(C)
    sd["classifier.weight"], sd["classifier.bias"] = rnd(2, C), rnd(2)
    write(out, "vit", cfg, sd, torch.float32)


def vit_timm(out):
    C, H, L, F, I, P, CH = 12, 3, 2, 48, 8, 4, 3
    N = 1 + (I // P) ** 2
    cfg = {"architecture": "vit_tiny_patch4_8", "num_classes": 5, "num_features": C,
           "global_pool": "token",
           "pretrained_cfg": {"tag": "fixture", "input_size": [CH, I, I],
                              "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5],
                              "num_classes": 5}}
    sd = {"cls_token": rnd(1, 1, C), "pos_embed": rnd(1, N, C, std=0.2),
          "patch_embed.proj.weight": rnd(C, CH, P, P, std=0.3),
          "patch_embed.proj.bias": rnd(C, std=0.1)}
    for i in range(L):
        p = "blocks.%d." % i
        sd[p + "norm1.weight"], sd[p + "norm1.bias"] = ln(C)
        sd[p + "attn.qkv.weight"] = rnd(3 * C, C)
        sd[p + "attn.qkv.bias"] = rnd(3 * C, std=0.2)
        sd[p + "attn.proj.weight"] = rnd(C, C)
        sd[p + "attn.proj.bias"] = rnd(C, std=0.1)
        sd[p + "norm2.weight"], sd[p + "norm2.bias"] = ln(C)
        sd[p + "mlp.fc1.weight"], sd[p + "mlp.fc1.bias"] = rnd(F, C), rnd(F, std=0.1)
        sd[p + "mlp.fc2.weight"], sd[p + "mlp.fc2.bias"] = rnd(C, F, std=0.3), rnd(C, std=0.1)
    sd["norm.weight"], sd["norm.bias"] = ln(C)
    sd["head.weight"], sd["head.bias"] = rnd(5, C), rnd(5)
    write(out, "vit_timm", cfg, sd, torch.float16)


def layer(out):
    C, H, KV, dk = 12, 4, 2, 4
    cfg = {"model_type": "attncheck_layer", "format_version": 1, "hidden_size": C,
           "num_attention_heads": H, "num_key_value_heads": KV, "head_dim": dk, "scale": 0.3,
           "mask": "causal", "sliding_window": 4, "norm": "rmsnorm", "norm_eps": 1e-5,
           "rope": "interleaved", "rope_theta": 50.0, "layer_index": 0,
           "source": "tests/models_fixtures.py"}
    sd = {"Wq": rnd(H * dk, C), "Wk": rnd(KV * dk, C), "Wv": rnd(KV * dk, C),
          "Wo": rnd(C, H * dk), "bq": rnd(H * dk, std=0.3), "bk": rnd(KV * dk, std=0.3),
          "norm.weight": 1 + rnd(C, std=0.2)}
    write(out, "layer", cfg, sd, torch.float64)
    C, H = 10, 2
    cfg = {"model_type": "attncheck_layer", "format_version": 1, "hidden_size": C,
           "num_attention_heads": H, "mask": "none", "norm": "layernorm", "norm_eps": 1e-6}
    sd = {"Wq": rnd(C, C), "Wk": rnd(C, C), "Wv": rnd(C, C), "Wo": rnd(C, C),
          "bq": rnd(C, std=0.3), "bk": rnd(C, std=0.3), "bv": rnd(C, std=0.3),
          "bo": rnd(C, std=0.3)}
    sd["norm.weight"], sd["norm.bias"] = ln(C)
    write(out, "layer_ln", cfg, sd, torch.float32)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: models_fixtures.py OUTDIR")
    out = sys.argv[1]
    for f in (gpt2, nanogpt, bert, roberta, distilbert, llama, mistral, qwen2, vit, vit_timm,
              layer):
        f(out)
