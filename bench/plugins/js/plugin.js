// sdk-bench (JavaScript): B11's plugin. Subscribes to Pods; with no
// configuration it does nothing with them (the no-op handler), with
// {"mode": "parse"} it parses each added object and reads its name (the
// parse handler). One component serves both, so a run builds and compiles it
// once; the handler is picked when the instance is created, not per call.
import { Handler, Manifest, Subscription, config } from '@herald/sdk';

export default class SdkBench extends Handler {
  constructor() {
    super();
    this.names = 0;
    if (config.get()?.mode === 'parse') {
      this.onAdd = this.parseAdd;
    }
  }

  manifest() {
    return new Manifest('sdk-bench-js', '0.1.0').subscribe(Subscription.to('', 'v1', 'Pod'));
  }

  parseAdd(event) {
    this.names += event.object.metadata.name.length;
  }
}
