// The designer's last line: an error thrown while rendering shows what happened and a way
// back, instead of React unmounting the whole page to a blank one.
import { Component, type ErrorInfo, type ReactNode } from 'react';

type Props = { children: ReactNode };
type State = { error: Error | null };

export class ErrorBoundary extends Component<Props, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  componentDidCatch(error: Error, info: ErrorInfo) {
    console.error('the designer failed', error, info.componentStack);
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <div className="page" role="alert" data-testid="designer-failed">
        <h1>The designer failed</h1>
        <p className="field-error">{error.message || String(error)}</p>
        <p>Unsaved edits of the scenario open are lost; saved versions, deployments and test cases are on the server.</p>
        <p>
          <button type="button" className="primary" onClick={() => this.setState({ error: null })}>
            Try again
          </button>{' '}
          <button type="button" onClick={() => location.reload()}>
            Reload the page
          </button>
        </p>
      </div>
    );
  }
}
