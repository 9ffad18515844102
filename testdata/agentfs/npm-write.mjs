// Writes a delta database with the AgentFS npm SDK (agentfs-sdk@0.6.4):
// node npm-write.mjs NODE_MODULES DB. The SDK has no overlay, so the delta
// only adds and replaces files: what an agent that wrote through it leaves.
import path from "node:path";

const [modules, db] = process.argv.slice(2);
const { AgentFS } = await import(path.join(modules, "agentfs-sdk", "dist", "index_node.js"));
const agent = await AgentFS.open({ path: db });
const fs = agent.fs;
await fs.writeFile("/edit.txt", "changed by the npm SDK\n");
await fs.mkdir("/src");
await fs.writeFile("/src/tmp.txt", "renamed away");
await fs.rename("/src/tmp.txt", "/src/main.go", );
await fs.writeFile("/src/main.go", "package main\n\nfunc main() {}\n");
await fs.writeFile("/scratch.txt", "deleted again");
await fs.unlink("/scratch.txt");
await fs.symlink("edit.txt", "/link");
const big = Buffer.alloc(10000, 7); // more than one 4096-byte chunk
await fs.writeFile("/big.bin", big);
await agent.close();
