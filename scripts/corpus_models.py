"""The architectures of weft's model corpus (scripts/corpus.py): each built from its
config alone (random weights, no download: torchvision `weights=None`, timm
`pretrained=False`, Hugging Face transformers from a config object), with small inputs.

An entry is `Entry(name, family, build, inputs)`: `build()` returns an `nn.Module` whose
`forward(*inputs)` returns one tensor, `inputs(seed)` a dict of named numpy arrays in
the order `forward` takes them (token ids as int64). `FIXTURES` names the small configs
exported with symbolic dimensions for CI (onnx/tests/fixtures/corpus).
"""
import numpy as np

IMAGE = 64  # pixels a side: small enough that a full run fits in minutes
TOKENS = 16
VOCAB = 1000


def image(size=IMAGE, channels=3, batch=1):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"pixel_values": rng.standard_normal((batch, channels, size, size)).astype(np.float32)}
    return make


def video(frames=4, size=32):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"video": rng.standard_normal((1, 3, frames, size, size)).astype(np.float32)}
    return make


def ids(tokens=TOKENS, vocab=VOCAB):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"input_ids": rng.integers(0, vocab, size=(1, tokens), dtype=np.int64)}
    return make


def audio(samples):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"input_values": rng.standard_normal((1, samples)).astype(np.float32)}
    return make


def mel(bins, frames):
    def make(seed):
        rng = np.random.default_rng(seed)
        return {"input_features": rng.standard_normal((1, bins, frames)).astype(np.float32)}
    return make


class Entry:
    """One architecture: its name, family (the table's grouping), builder and inputs."""

    def __init__(self, name, family, build, inputs):
        self.name, self.family, self.build, self.inputs = name, family, build, inputs


def first_tensor(out):
    """The main tensor of a model's output: a tensor, the first of a tuple, `out` of a
    segmentation dict, or last_hidden_state / logits of a Hugging Face output."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        for key in ("out", "last_hidden_state", "logits"):
            if key in out and out[key] is not None:
                return out[key]
        return next(v for v in out.values() if isinstance(v, torch.Tensor))
    if hasattr(out, "last_hidden_state") and out.last_hidden_state is not None:
        return out.last_hidden_state
    if hasattr(out, "logits"):
        return out.logits
    return first_tensor(out[0])


def wrap(model, call):
    """A module whose forward(*inputs) is `call(model, *inputs)`'s main tensor."""
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *xs):
            return first_tensor(call(self.m, *xs))

    return Wrapper(model)


def tv(name, **kw):
    def build():
        import torchvision

        return wrap(getattr(torchvision.models, name)(weights=None, **kw), lambda m, x: m(x))
    return build


def tv_class(make):
    def build():
        return wrap(make(), lambda m, x: m(x))
    return build


def tv_seg(name):
    def build():
        import torchvision

        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, aux_loss=False)
        return wrap(m, lambda m, x: m(x)["out"])
    return build


def tv_video(name):
    def build():
        import torchvision

        return wrap(getattr(torchvision.models.video, name)(weights=None), lambda m, x: m(x))
    return build


def tm(name, **kw):
    def build():
        import timm

        return wrap(timm.create_model(name, pretrained=False, **kw), lambda m, x: m(x))
    return build


def hf(config_name, model_name, mask=False, encoder=False, **cfg):
    """A Hugging Face model from `transformers.<config_name>(**cfg)`, eager attention, no
    cache; `mask` passes an all-ones attention mask made inside the graph (transformers 5
    otherwise looks for packed sequences with torch.diff), `encoder` takes `.encoder`."""
    def build():
        import torch
        import transformers

        config = getattr(transformers, config_name)(**cfg)
        config._attn_implementation = "eager"
        if hasattr(config, "use_cache"):
            config.use_cache = False
        model = getattr(transformers, model_name)(config)
        if encoder:
            model = model.encoder if hasattr(model, "encoder") else model.get_encoder()
        if mask:
            return wrap(model, lambda m, x: m(x, attention_mask=torch.ones_like(x), return_dict=True))
        return wrap(model, lambda m, x: m(x, return_dict=True))
    return build


TEXT = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=64)
DECODER = dict(TEXT, num_key_value_heads=2, pad_token_id=0)


def _vit_tv():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=IMAGE, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128)


def _swin_tv():
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4])


def _swin_tv_pad():
    # A window that does not divide the feature map: torchvision pads (F.pad) then crops.
    from torchvision.models.swin_transformer import SwinTransformer

    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[7, 7])


ENTRIES = [
    # torchvision: classification
    Entry("tv_resnet18", "torchvision", tv("resnet18"), image()),
    Entry("tv_resnet50", "torchvision", tv("resnet50"), image()),
    Entry("tv_mobilenet_v2", "torchvision", tv("mobilenet_v2"), image()),
    Entry("tv_mobilenet_v3_small", "torchvision", tv("mobilenet_v3_small"), image()),
    Entry("tv_efficientnet_b0", "torchvision", tv("efficientnet_b0"), image()),
    Entry("tv_mnasnet0_5", "torchvision", tv("mnasnet0_5"), image()),
    Entry("tv_shufflenet_v2_x0_5", "torchvision", tv("shufflenet_v2_x0_5"), image()),
    Entry("tv_squeezenet1_1", "torchvision", tv("squeezenet1_1"), image()),
    Entry("tv_densenet121", "torchvision", tv("densenet121"), image()),
    Entry("tv_regnet_y_400mf", "torchvision", tv("regnet_y_400mf"), image()),
    Entry("tv_googlenet", "torchvision", tv("googlenet", aux_logits=False, init_weights=True), image()),
    Entry("tv_inception_v3", "torchvision", tv("inception_v3", aux_logits=False, init_weights=True), image(size=80)),
    Entry("tv_convnext_tiny", "torchvision", tv("convnext_tiny"), image()),
    Entry("tv_vit_small", "torchvision", tv_class(_vit_tv), image()),
    Entry("tv_swin_small", "torchvision", tv_class(_swin_tv), image()),
    Entry("tv_swin_window7", "torchvision", tv_class(_swin_tv_pad), image()),
    # torchvision: segmentation, video
    Entry("tv_fcn_resnet50", "torchvision-seg", tv_seg("fcn_resnet50"), image()),
    Entry("tv_deeplabv3_mobilenet_v3", "torchvision-seg", tv_seg("deeplabv3_mobilenet_v3_large"), image()),
    Entry("tv_lraspp_mobilenet_v3", "torchvision-seg", tv_seg("lraspp_mobilenet_v3_large"), image()),
    Entry("tv_r3d_18", "torchvision-video", tv_video("r3d_18"), video()),
    # timm: convolutional
    Entry("timm_resnet18d", "timm-conv", tm("resnet18d"), image()),
    Entry("timm_tf_efficientnet_b0", "timm-conv", tm("tf_efficientnet_b0"), image()),
    Entry("timm_ghostnet_100", "timm-conv", tm("ghostnet_100"), image()),
    Entry("timm_regnetx_002", "timm-conv", tm("regnetx_002"), image()),
    Entry("timm_convnext_atto", "timm-conv", tm("convnext_atto"), image()),
    Entry("timm_repvgg_a0", "timm-conv", tm("repvgg_a0"), image()),
    Entry("timm_hrnet_w18_small", "timm-conv", tm("hrnet_w18_small"), image()),
    Entry("timm_lcnet_050", "timm-conv", tm("lcnet_050"), image()),
    # timm: transformers
    Entry("timm_vit_tiny", "timm-transformer", tm("vit_tiny_patch16_224", img_size=IMAGE, patch_size=8, depth=2), image()),
    Entry("timm_deit_tiny", "timm-transformer", tm("deit_tiny_patch16_224", img_size=IMAGE, patch_size=8, depth=2), image()),
    Entry("timm_swin_tiny", "timm-transformer",
          tm("swin_tiny_patch4_window7_224", img_size=IMAGE, window_size=4, depths=(2, 2), num_heads=(3, 6),
             embed_dim=48), image()),
    Entry("timm_pvt_v2_b0", "timm-transformer", tm("pvt_v2_b0"), image()),
    Entry("timm_mixer_s16", "timm-transformer", tm("mixer_s16_224", img_size=IMAGE), image()),
    # timm: hybrids
    Entry("timm_mobilevit_xxs", "timm-hybrid", tm("mobilevit_xxs"), image()),
    Entry("timm_levit_128s", "timm-hybrid", tm("levit_128s", img_size=IMAGE), image()),
    Entry("timm_efficientvit_b0", "timm-hybrid", tm("efficientvit_b0"), image()),
    Entry("timm_mobilevitv2_050", "timm-hybrid", tm("mobilevitv2_050"), image()),
    Entry("timm_poolformer_s12", "timm-hybrid", tm("poolformer_s12"), image()),
    Entry("timm_edgenext_xx_small", "timm-hybrid", tm("edgenext_xx_small"), image()),
    # Hugging Face: encoders with different embedding layouts
    Entry("hf_bert", "hf-encoder", hf("BertConfig", "BertModel", **TEXT), ids()),
    Entry("hf_roberta", "hf-encoder", hf("RobertaConfig", "RobertaModel", pad_token_id=1, **TEXT), ids()),
    Entry("hf_distilbert", "hf-encoder",
          hf("DistilBertConfig", "DistilBertModel", vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
             max_position_embeddings=64), ids()),
    Entry("hf_albert", "hf-encoder", hf("AlbertConfig", "AlbertModel", embedding_size=32, **TEXT), ids()),
    Entry("hf_electra", "hf-encoder", hf("ElectraConfig", "ElectraModel", embedding_size=32, **TEXT), ids()),
    Entry("hf_deberta_v2", "hf-encoder",
          hf("DebertaV2Config", "DebertaV2Model", relative_attention=True, position_buckets=16,
             max_relative_positions=32, pos_att_type=["p2c", "c2p"], **TEXT), ids()),
    Entry("hf_t5_encoder", "hf-encoder",
          hf("T5Config", "T5EncoderModel", vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
          ids()),
    # Hugging Face: decoder-only LLM families (rotary embeddings, grouped KV heads)
    Entry("hf_llama", "hf-decoder", hf("LlamaConfig", "LlamaModel", mask=True, **DECODER), ids()),
    Entry("hf_qwen2", "hf-decoder", hf("Qwen2Config", "Qwen2Model", mask=True, **DECODER), ids()),
    Entry("hf_mistral", "hf-decoder", hf("MistralConfig", "MistralModel", mask=True, **DECODER), ids()),
    Entry("hf_phi3", "hf-decoder", hf("Phi3Config", "Phi3Model", mask=True, **DECODER), ids()),
    Entry("hf_gemma", "hf-decoder", hf("GemmaConfig", "GemmaModel", mask=True, head_dim=16, **DECODER), ids()),
    Entry("hf_gpt2", "hf-decoder",
          hf("GPT2Config", "GPT2Model", mask=True, vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64),
          ids()),
    Entry("hf_gpt_neox", "hf-decoder",
          hf("GPTNeoXConfig", "GPTNeoXModel", mask=True, rotary_pct=0.25, **TEXT), ids()),
    # Hugging Face: vision and speech
    Entry("hf_vit", "hf-vision",
          hf("ViTConfig", "ViTModel", image_size=IMAGE, patch_size=8, hidden_size=64, num_hidden_layers=2,
             num_attention_heads=4, intermediate_size=128), image()),
    Entry("hf_swin", "hf-vision",
          hf("SwinConfig", "SwinModel", image_size=IMAGE, patch_size=4, embed_dim=32, depths=[2, 2],
             num_heads=[2, 4], window_size=4), image()),
    Entry("hf_convnext", "hf-vision",
          hf("ConvNextConfig", "ConvNextModel", hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1]), image()),
    Entry("hf_wav2vec2", "hf-speech",
          hf("Wav2Vec2Config", "Wav2Vec2Model", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, conv_dim=(32,) * 7, num_conv_pos_embeddings=16,
             num_conv_pos_embedding_groups=4), audio(4000)),
    Entry("hf_whisper_encoder", "hf-speech",
          hf("WhisperConfig", "WhisperModel", encoder=True, d_model=64, encoder_layers=2, encoder_attention_heads=4,
             encoder_ffn_dim=128, decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=128,
             num_mel_bins=16, max_source_positions=32), mel(16, 64)),
]

BY_NAME = {e.name: e for e in ENTRIES}
