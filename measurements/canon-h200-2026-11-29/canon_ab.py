# Exports HF BERT-base and a 4-layer TinyLlama-shaped decoder (random weights, TorchScript
# exporter, opset 17, batch 1, 128 tokens) and writes their token ids.
import os, sys, numpy as np, torch, transformers as tf
out = sys.argv[1]
torch.manual_seed(0)
def export(name, model, vocab):
    d = os.path.join(out, name); os.makedirs(d + "/in", exist_ok=True)
    ids = torch.randint(0, vocab, (1, 128))
    torch.onnx.export(model.eval(), (ids,), f"{d}/model.onnx", opset_version=17, dynamo=False,
                      input_names=["input_ids"], output_names=["out"])
    np.save(f"{d}/in/input_ids.npy", ids.numpy())
class Enc(torch.nn.Module):
    def __init__(s): super().__init__(); s.m = tf.BertModel(tf.BertConfig(use_cache=False))
    def forward(s, ids): return s.m(input_ids=ids).last_hidden_state
export("bert", Enc(), 30522)
cfg = tf.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=32,
                     num_key_value_heads=4, vocab_size=32000, max_position_embeddings=512, use_cache=False)
class Dec(torch.nn.Module):
    def __init__(s): super().__init__(); s.m = tf.LlamaModel(cfg)
    def forward(s, ids): return s.m(input_ids=ids).last_hidden_state
export("llama4", Dec(), 32000)
