# A tiny Transformer training loop as people write it: batches made on the CPU (ordinary, pageable tensors) and
# sent with non_blocking=True, loss.item() every step for the log. Times its own stalls with time.perf_counter()
# and prints `CLOCK transformer_train <label> <us>` lines (totals over the steps) to stderr.
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda"
d_model, heads, layers, seq, batch, vocab = 256, 8, 4, 128, 32, 1000
steps = 50


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=1024, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


model = Model().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()

clock = {"to_cuda": 0.0, "item": 0.0}
for step in range(steps):
    tokens_cpu = torch.randint(0, vocab, (batch, seq))  # pageable
    target_cpu = torch.randint(0, vocab, (batch, seq))
    noise_cpu = torch.randn(batch, seq, d_model)  # pageable, 4 MiB
    t0 = time.perf_counter()
    tokens = tokens_cpu.to(device, non_blocking=True)
    target = target_cpu.to(device, non_blocking=True)
    noise = noise_cpu.to(device, non_blocking=True)
    clock["to_cuda"] += time.perf_counter() - t0
    logits = model(tokens) + 0.0 * noise.sum()
    loss = loss_fn(logits.reshape(-1, vocab), target.reshape(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    t0 = time.perf_counter()
    value = loss.item()  # for the log: waits for the step
    clock["item"] += time.perf_counter() - t0
    if step % 10 == 0:
        print(f"step {step}: loss {value:.3f}")

for label, seconds in clock.items():
    print(f"CLOCK transformer_train {label}_total {seconds * 1e6:.1f}", file=sys.stderr)
print("transformer_train: done")
